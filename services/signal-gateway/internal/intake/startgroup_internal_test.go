package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/weftest"
)

// startSetup returns an Intake over a fresh database in which environment
// "tight" rejects runs past its first.
func startSetup(t *testing.T) (*Intake, *weftest.DB) {
	t.Helper()
	db := weftest.NewDB(t)
	in, err := New(db.Pool, eventlog.New(db.Pool), journal.New(eventlog.New(db.Pool)), auth.RoleAuthorizer{}, Config{Admission: admission.Limits{
		PerEnvironment: map[string]admission.Limit{"tight": {MaxConcurrentRuns: 1, Policy: admission.Reject}},
	}})
	require.NoError(t, err)
	return in, db
}

func startRequest(env, requestID string) api.StartRunRequest {
	return api.StartRunRequest{TenantID: "acme", ProjectID: "p", EnvironmentID: env, PlanID: "gate", PlanVersion: "1",
		RunRequestID: requestID,
		Plan:         json.RawMessage(`{"planId":"gate","planVersion":"1","steps":[{"id":"w","kind":"waitSignal","signal":"go"}]}`)}
}

func groupStart(t *testing.T, in *Intake, env, requestID string) *startCall {
	t.Helper()
	start, err := in.admitStart(t.Context(), groupOperator, startRequest(env, requestID))
	require.NoError(t, err)
	return newStartCall(t.Context(), start)
}

// startRows returns, for run, its RunApproved events, engine_runs rows and
// RunApproved outbox rows, and the transaction that wrote its run request
// (the row's xmin).
func startRows(t *testing.T, db *weftest.DB, run string) ([3]int, string) {
	t.Helper()
	var n [3]int
	for i, q := range []string{
		`SELECT count(*) FROM run_events WHERE run_id = $1 AND event_type = 'RunApproved'`,
		`SELECT count(*) FROM engine_runs WHERE run_id = $1`,
		`SELECT count(*) FROM outbox WHERE subject = 'weft.events.in.' || $1 AND headers->>'Weft-Event-Type' = 'RunApproved'`,
	} {
		require.NoError(t, db.Pool.QueryRow(t.Context(), q, run).Scan(&n[i]))
	}
	var xmin string
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT xmin::text FROM run_requests WHERE run_id = $1`, run).Scan(&xmin))
	return n, xmin
}

// A group makes each of its starts as if alone, in one transaction: new
// ones are approved, with their events, engine_runs rows and outbox rows,
// and a repeat of an earlier start is answered with that start's run.
func TestStartGroupStartsEachInOneTransaction(t *testing.T) {
	t.Parallel()
	in, db := startSetup(t)
	first, err := in.RunStart(t.Context(), groupOperator, startRequest("dev", "again"))
	require.NoError(t, err)
	group := []*startCall{groupStart(t, in, "dev", "a"), groupStart(t, in, "dev", "b"),
		groupStart(t, in, "dev", "again"), groupStart(t, in, "dev", "c")}

	in.startGroup(group)
	xmins := map[string]bool{}
	for _, c := range []*startCall{group[0], group[1], group[3]} {
		require.NoError(t, c.err)
		require.True(t, c.res.Created)
		require.False(t, c.res.Duplicate)
		require.Equal(t, c.start.RunRequestID, c.res.RunRequestID)
		n, xmin := startRows(t, db, c.res.RunID)
		require.Equal(t, [3]int{1, 1, 1}, n)
		xmins[xmin] = true
	}
	require.Len(t, xmins, 1, "the group's starts commit in one transaction")
	require.NoError(t, group[2].err)
	require.True(t, group[2].res.Duplicate)
	require.Equal(t, first.RunID, group[2].res.RunID)
	n, _ := startRows(t, db, first.RunID)
	require.Equal(t, [3]int{1, 1, 1}, n, "a repeat writes nothing")
}

// A group holding a start whose environment rejects past its limit is
// refused before anything is written (runstart.ErrCheckAlone); each start
// is then made alone, so the check counts the runs before it: one of the
// two starts into "tight" is approved, the other rejected, and the start
// into "dev" is approved.
func TestStartGroupMakesEachAloneAfterAFault(t *testing.T) {
	t.Parallel()
	in, db := startSetup(t)
	group := []*startCall{groupStart(t, in, "tight", "t1"), groupStart(t, in, "dev", "d"), groupStart(t, in, "tight", "t2")}
	_, err := in.approver.ApproveAllTx(t.Context(), nil, []runstart.Request{group[0].start, group[1].start})
	require.ErrorIs(t, err, runstart.ErrCheckAlone)

	in.startGroup(group)
	require.NoError(t, group[0].err)
	require.NoError(t, group[1].err)
	_, rejected := errors.AsType[*admission.RejectedError](group[2].err)
	require.True(t, rejected, "%v", group[2].err)
	xmins := map[string]bool{}
	for _, c := range group[:2] {
		n, xmin := startRows(t, db, c.res.RunID)
		require.Equal(t, [3]int{1, 1, 1}, n)
		xmins[xmin] = true
	}
	require.Len(t, xmins, 2, "each start alone")
	var claims int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM run_requests WHERE run_request_id = 't2'`).Scan(&claims))
	require.Zero(t, claims, "a rejected start leaves no claim")
}

// Each start of a group carries its own caller's trace to the bus, not
// the trace of the call whose context the group's transaction runs on.
func TestStartGroupKeepsEachStartsTrace(t *testing.T) {
	t.Parallel()
	in, db := startSetup(t)
	var group []*startCall
	for i := range 3 {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{byte(i + 1)}, SpanID: trace.SpanID{1},
			TraceFlags: trace.FlagsSampled})
		start, err := in.admitStart(t.Context(), groupOperator, startRequest("dev", fmt.Sprint("traced-", i)))
		require.NoError(t, err)
		group = append(group, newStartCall(trace.ContextWithSpanContext(t.Context(), sc), start))
	}

	in.startGroup(group)
	for i, c := range group {
		require.NoError(t, c.err)
		var parent string
		require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT headers->>'traceparent' FROM outbox WHERE subject = 'weft.events.in.' || $1`,
			c.res.RunID).Scan(&parent))
		require.Contains(t, parent, trace.TraceID{byte(i + 1)}.String())
	}
}

// Concurrent starts through RunStart, many of one run request and many
// of distinct ones, grouped as they come: the repeated request starts
// one run, which every repeat names, and each other request its own.
func TestConcurrentStartsStartEachRequestOnce(t *testing.T) {
	t.Parallel()
	in, db := startSetup(t)
	const repeats, distinct = 16, 32
	results := make([]RunResult, repeats+distinct)
	var wg sync.WaitGroup
	for i := range results {
		id := "same"
		if i >= repeats {
			id = fmt.Sprint("own-", i)
		}
		wg.Go(func() {
			var err error
			results[i], err = in.RunStart(context.Background(), groupOperator, startRequest("dev", id))
			require.NoError(t, err)
		})
	}
	wg.Wait()
	created, runs := 0, map[string]bool{}
	for i, res := range results {
		runs[res.RunID] = true
		if res.Created {
			created++
		}
		if i < repeats {
			require.Equal(t, results[0].RunID, res.RunID, "every repeat names the one run")
		}
	}
	require.Equal(t, 1+distinct, created)
	require.Len(t, runs, 1+distinct)
	var approved int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM run_events WHERE event_type = 'RunApproved'`).Scan(&approved))
	require.Equal(t, 1+distinct, approved)
}
