package intake_test

import (
	"context"
	"encoding/json"
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
