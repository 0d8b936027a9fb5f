package round_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/engine/internal/decide"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// Every task carries its run's tenant, from the run's approval: the task
// of a cold run (loaded from the log) and that of a warm one (kept by the
// runner since its last round) alike.
func TestTasksCarryTheRunsTenant(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := weftest.NewDB(t)
	approver := runstart.Approver{Journal: journal.New(eventlog.New(db.Pool))}
	p := &plan.Plan{PlanID: "two", PlanVersion: "1", Steps: []plan.Step{
		{ID: "a", Activity: "echo"}, {ID: "b", Activity: "echo", DependsOn: []string{"a"}},
	}}
	v, err := p.Validated(plan.Limits{})
	require.NoError(t, err)
	runID, err := approver.Approve(ctx, db.Pool, runstart.Request{TenantID: "acme", EnvironmentID: "prod", Plan: v})
	require.NoError(t, err)

	x := newRunner(db.Pool, round.Config{})
	for _, in := range []decide.Input{
		decide.RunApproved{Now: time.Now().UTC()},
		started("a"),
		completed("a"),
	} {
		_, err := x.Run(ctx, round.Round{RunID: runID, Input: in})
		require.NoError(t, err)
	}

	rows, err := db.Pool.Query(ctx, `SELECT payload FROM outbox WHERE subject LIKE 'weft.tasks.%' ORDER BY id`)
	require.NoError(t, err)
	var tenants []string
	for rows.Next() {
		var payload []byte
		require.NoError(t, rows.Scan(&payload))
		var tk task.Task
		require.NoError(t, json.Unmarshal(payload, &tk))
		tenants = append(tenants, tk.StepID+":"+tk.TenantID)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"a:acme", "b:acme"}, tenants)
}

// A round makes sure the lanes stream of each queue a tenant's task goes
// to exists before it writes the task (Config.EnsureLanes), once per
// queue in a batch; a run of no tenant needs none, and a failure fails
// the round, so no task is written that no stream would capture.
func TestRoundsEnsureTheQueuesLanes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := weftest.NewDB(t)
	approver := runstart.Approver{Journal: journal.New(eventlog.New(db.Pool))}
	p := &plan.Plan{PlanID: "fan", PlanVersion: "1", Steps: []plan.Step{
		{ID: "a", Activity: "echo"}, {ID: "b", Activity: "echo"}, {ID: "c", Activity: "echo", Queue: "batch"},
	}}
	v, err := p.Validated(plan.Limits{})
	require.NoError(t, err)
	var ensured []string
	fail := false
	x := newRunner(db.Pool, round.Config{EnsureLanes: func(_ context.Context, queue string) error {
		if fail {
			return errors.New("no stream for you")
		}
		ensured = append(ensured, queue)
		return nil
	}})
	start := func(tenant string) error {
		runID, err := approver.Approve(ctx, db.Pool, runstart.Request{TenantID: tenant, EnvironmentID: "prod", Plan: v})
		require.NoError(t, err)
		_, err = x.Run(ctx, round.Round{RunID: runID, Input: decide.RunApproved{Now: time.Now().UTC()}})
		return err
	}
	require.NoError(t, start("acme"))
	require.ElementsMatch(t, []string{"default", "batch"}, ensured, "each queue once")
	ensured = nil
	require.NoError(t, start(""))
	require.Empty(t, ensured, "tasks of no tenant go on the queue's own subject")
	var before, after int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&before))
	fail = true
	require.ErrorContains(t, start("globex"), "no stream for you")
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&after))
	require.Equal(t, before+1, after, "only the approval's own row: the failed round wrote no task")
}
