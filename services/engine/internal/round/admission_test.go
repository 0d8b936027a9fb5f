package round_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/engine/internal/decide"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// A batch that starts runs of several limited environments takes their
// admission locks first, in environment order, whatever the order of its
// rounds: with env-a's lock held elsewhere, a batch whose first round
// starts a run of env-b waits for env-a without holding env-b. (Taking
// them round by round, it would hold env-b while it waits: two batches in
// opposite orders would deadlock.) Once env-a is free, both runs start.
func TestBatchTakesAdmissionLocksInOrder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := weftest.NewDB(t)
	approver := runstart.Approver{Journal: journal.New(eventlog.New(db.Pool))}
	p := &plan.Plan{PlanID: "one", PlanVersion: "1", Steps: []plan.Step{{ID: "a", Activity: "echo"}}}
	v, err := p.Validated(plan.Limits{})
	require.NoError(t, err)
	runA, err := approver.Approve(ctx, db.Pool, runstart.Request{EnvironmentID: "env-a", Plan: v})
	require.NoError(t, err)
	runB, err := approver.Approve(ctx, db.Pool, runstart.Request{EnvironmentID: "env-b", Plan: v})
	require.NoError(t, err)

	holder, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(context.WithoutCancel(ctx)) }()
	lock := &pgx.Batch{}
	admission.QueueLocks(lock, []string{"env-a"}, nil)
	require.NoError(t, holder.SendBatch(ctx, lock).Close())

	x := newRunner(db.Pool, round.Config{Admission: admission.Limits{Default: admission.Limit{MaxConcurrentRuns: 10}}})
	now := time.Now().UTC()
	type batchResult struct {
		results []round.Result
		err     error
	}
	done := make(chan batchResult, 1)
	go func() {
		results, err := x.RunBatch(ctx, []round.Round{
			{RunID: runB, Input: decide.RunApproved{Now: now}},
			{RunID: runA, Input: decide.RunApproved{Now: now}},
		})
		done <- batchResult{results, err}
	}()

	require.Eventually(t, func() bool {
		var waiting int
		err := db.Pool.QueryRow(ctx, `
			SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
			WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted`).Scan(&waiting)
		return err == nil && waiting == 1
	}, 10*time.Second, 10*time.Millisecond, "the batch waits for env-a")
	var free bool
	err = db.Pool.QueryRow(ctx, `
		SELECT pg_try_advisory_xact_lock(hashtext('weft-admission:' || $1))`, "env-b").Scan(&free)
	require.NoError(t, err)
	require.True(t, free, "the waiting batch holds no lock of env-b")

	require.NoError(t, holder.Rollback(ctx))
	got := <-done
	require.NoError(t, got.err)
	for i, res := range got.results {
		require.NoError(t, res.Err, "round %d", i)
		require.NotZero(t, res.Appended, "round %d started its run", i)
	}
	var started int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM engine_runs WHERE started_at IS NOT NULL`).Scan(&started))
	require.Equal(t, 2, started)
}
