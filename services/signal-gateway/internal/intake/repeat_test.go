package intake_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
)

// startTx starts req in a transaction of its own through RunStartTx,
// answering a repeat as repeat says.
func (b *bundle) startTx(t *testing.T, req api.StartRunRequest, repeat intake.Repeat) (intake.RunResult, error) {
	t.Helper()
	var res intake.RunResult
	err := pgx.BeginFunc(context.Background(), b.db.Pool, func(tx pgx.Tx) error {
		var err error
		res, err = b.in.RunStartTx(context.Background(), tx, operator, req, repeat)
		return err
	})
	return res, err
}

// withInput is startReq(id) with input.
func withInput(id, input string) api.StartRunRequest {
	req := startReq(id)
	req.Input = json.RawMessage(input)
	return req
}

// TestRunStartRepeatOfAnotherRequest: a repeat of a run-request tuple
// with another input is refused with IdempotencyConflict, naming the
// first run, under RepeatMustMatch (plain starts and trigger events),
// and answered with the first run under RepeatOfTuple (schedule fires,
// the same fire whatever their schedule holds now). The refusal writes
// nothing. An expired row reclaimed by a new start takes that start's
// digest.
func TestRunStartRepeatOfAnotherRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{RunRequestRetention: time.Hour})
	first, err := b.startTx(t, withInput("fire-1", `{"n":1}`), intake.RepeatOfTuple)
	require.NoError(t, err)
	require.True(t, first.Created)

	fire, err := b.startTx(t, withInput("fire-1", `{"n":2}`), intake.RepeatOfTuple)
	require.NoError(t, err)
	require.True(t, fire.Duplicate)
	require.Equal(t, first.RunID, fire.RunID)

	events := b.count(t, `SELECT count(*) FROM run_events`)
	_, err = b.startTx(t, withInput("fire-1", `{"n":2}`), intake.RepeatMustMatch)
	e := intaketest.RequireRefused(t, err, api.CodeIdempotencyConflict, "")
	require.Equal(t, first.RunID, e.Details["runId"])
	_, err = b.in.RunStart(context.Background(), operator, withInput("fire-1", `{"n":2}`))
	intaketest.RequireRefused(t, err, api.CodeIdempotencyConflict, "")
	require.Equal(t, events, b.count(t, `SELECT count(*) FROM run_events`), "a refused repeat writes nothing")

	same, err := b.in.RunStart(context.Background(), operator, withInput("fire-1", `{ "n" : 1 }`))
	require.NoError(t, err)
	require.True(t, same.Duplicate, "the same input in other white space is the same request")

	b.clock.Add(time.Hour)
	again, err := b.in.RunStart(context.Background(), operator, withInput("fire-1", `{"n":2}`))
	require.NoError(t, err)
	require.True(t, again.Created, "past the retention the tuple starts a new run")
	_, err = b.in.RunStart(context.Background(), operator, withInput("fire-1", `{"n":1}`))
	e = intaketest.RequireRefused(t, err, api.CodeIdempotencyConflict, "")
	require.Equal(t, again.RunID, e.Details["runId"], "the reclaimed row holds the new start's digest")
}

// atVersion is withInput(id, input) of planDoc at version v.
func atVersion(id, v, input string) api.StartRunRequest {
	req := withInput(id, input)
	req.PlanVersion = v
	req.Plan = json.RawMessage(strings.Replace(planDoc, `"planVersion":"1"`, `"planVersion":"`+v+`"`, 1))
	return req
}

// TestRunStartRepeatOfRequestID: under RepeatOfRequestID a start is a
// repeat by its run request id whatever plan version it runs: a repeat
// at another version answers the first run and writes nothing, one with
// another input is refused with IdempotencyConflict; the same request id
// under RepeatMustMatch is another tuple, whose repeats at another
// version are starts of their own.
func TestRunStartRepeatOfRequestID(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	first, err := b.startTx(t, atVersion("tr:e1", "1", `{"n":1}`), intake.RepeatOfRequestID)
	require.NoError(t, err)
	require.True(t, first.Created)
	events := b.count(t, `SELECT count(*) FROM run_events`)

	again, err := b.startTx(t, atVersion("tr:e1", "2", `{ "n": 1 }`), intake.RepeatOfRequestID)
	require.NoError(t, err)
	require.True(t, again.Duplicate, "another version, the same request id")
	require.Equal(t, first.RunID, again.RunID)
	_, err = b.startTx(t, atVersion("tr:e1", "2", `{"n":2}`), intake.RepeatOfRequestID)
	e := intaketest.RequireRefused(t, err, api.CodeIdempotencyConflict, "")
	require.Equal(t, first.RunID, e.Details["runId"])
	require.Equal(t, events, b.count(t, `SELECT count(*) FROM run_events`), "neither repeat writes anything")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM run_requests WHERE run_request_id = 'tr:e1'`))

	pinned, err := b.startTx(t, atVersion("tr:e1", "1", `{"n":1}`), intake.RepeatMustMatch)
	require.NoError(t, err)
	require.True(t, pinned.Created, "the version's own tuple is another run request")
	other, err := b.startTx(t, atVersion("tr:e1", "2", `{"n":1}`), intake.RepeatMustMatch)
	require.NoError(t, err)
	require.True(t, other.Created, "under RepeatMustMatch another version is another tuple")
	require.NotEqual(t, pinned.RunID, other.RunID)
}
