package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/weftest"
)

var groupOperator = auth.Principal{KeyID: "op", TenantID: "acme", Role: auth.RoleOperator}

// groupSetup returns an Intake over a fresh database and n runs of it.
func groupSetup(t *testing.T, n int) (*Intake, *weftest.DB, []string) {
	t.Helper()
	db := weftest.NewDB(t)
	in, err := New(db.Pool, eventlog.New(db.Pool), journal.New(eventlog.New(db.Pool)), auth.RoleAuthorizer{}, Config{})
	require.NoError(t, err)
	runs := make([]string, n)
	for i := range runs {
		res, err := in.RunStart(t.Context(), groupOperator, api.StartRunRequest{TenantID: "acme", ProjectID: "p",
			EnvironmentID: "dev", PlanID: "gate", PlanVersion: "1", RunRequestID: fmt.Sprint("r", i),
			Plan: json.RawMessage(`{"planId":"gate","planVersion":"1","steps":[{"id":"w","kind":"waitSignal","signal":"go"}]}`)})
		require.NoError(t, err)
		runs[i] = res.RunID
	}
	return in, db, runs
}

func groupCall(ctx context.Context, in *Intake, run, id, payload string) *call {
	return newCall(ctx, groupOperator, Signal{RunID: run, Name: "go", ID: &id, Payload: json.RawMessage(payload)}, "", in.now())
}

// countAccepted counts run's SignalAccepted events, their outbox rows and
// acceptance records.
func countAccepted(t *testing.T, db *weftest.DB, run string) [3]int {
	t.Helper()
	var n [3]int
	for i, q := range []string{
		`SELECT count(*) FROM run_events WHERE run_id = $1 AND event_type = 'SignalAccepted'`,
		`SELECT count(*) FROM outbox WHERE subject = 'weft.events.in.' || $1 AND headers->>'Weft-Event-Type' = 'SignalAccepted'`,
		`SELECT count(*) FROM signal_acceptances WHERE run_id = $1`,
	} {
		require.NoError(t, db.Pool.QueryRow(t.Context(), q, run).Scan(&n[i]))
	}
	return n
}

// A group decides each of its signals as if alone: new ones are accepted,
// a repeat is answered from its record, a signal of a run of another
// tenant is not found, and all commit together.
func TestDecideGroupDecidesEachSignal(t *testing.T) {
	t.Parallel()
	in, db, runs := groupSetup(t, 4)
	ctx := t.Context()
	first, err := in.SignalSend(ctx, groupOperator, groupCall(ctx, in, runs[2], "again", `{}`).sig)
	require.NoError(t, err)
	group := []*call{groupCall(ctx, in, runs[0], "a", `{"n":0}`), groupCall(ctx, in, runs[1], "b", `{"n":1}`),
		groupCall(ctx, in, runs[2], "again", `{}`), groupCall(ctx, in, runs[3], "c", `{}`)}
	group[3].p = auth.Principal{KeyID: "other", TenantID: "globex", Role: auth.RoleAdmin}

	in.decideGroup(group)
	for _, c := range group[:2] {
		require.NoError(t, c.err)
		require.False(t, c.res.Duplicate)
		require.Equal(t, [3]int{1, 1, 1}, countAccepted(t, db, c.sig.RunID))
	}
	require.NoError(t, group[2].err)
	require.True(t, group[2].res.Duplicate)
	require.Equal(t, first.AcceptedSignalResult, group[2].res.AcceptedSignalResult)
	require.Equal(t, [3]int{1, 1, 1}, countAccepted(t, db, runs[2]), "a repeat writes nothing")
	refused, ok := errors.AsType[*Error](group[3].err)
	require.True(t, ok, "%v", group[3].err)
	require.Equal(t, api.CodeNotFound, refused.Code)
	require.Equal(t, [3]int{0, 0, 0}, countAccepted(t, db, runs[3]))
}

// A fault of one signal (a payload Postgres refuses) fails the group's
// transaction before its commit; each signal is then decided alone, so
// only the faulty one fails.
func TestDecideGroupFallsBackToOneByOneAfterAFault(t *testing.T) {
	t.Parallel()
	in, db, runs := groupSetup(t, 3)
	ctx := t.Context()
	group := []*call{groupCall(ctx, in, runs[0], "a", `{}`), groupCall(ctx, in, runs[1], "bad", `{"s":"\ud800"}`),
		groupCall(ctx, in, runs[2], "c", `{}`)}

	in.decideGroup(group)
	for _, i := range []int{0, 2} {
		require.NoError(t, group[i].err)
		require.False(t, group[i].res.Duplicate)
		require.Equal(t, [3]int{1, 1, 1}, countAccepted(t, db, runs[i]))
		again, err := in.SignalSend(ctx, groupOperator, group[i].sig)
		require.NoError(t, err)
		require.True(t, again.Duplicate)
		require.Equal(t, group[i].res.AcceptedSignalResult, again.AcceptedSignalResult)
	}
	require.Error(t, group[1].err)
	_, refused := errors.AsType[*Error](group[1].err)
	require.False(t, refused, "a fault, not a refusal: %v", group[1].err)
	require.Equal(t, [3]int{0, 0, 0}, countAccepted(t, db, runs[1]))
}
