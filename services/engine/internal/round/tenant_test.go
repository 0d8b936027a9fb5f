package round_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/journal"
	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/internal/weftest"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/task"
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
	require.NoError(t, p.Validate(plan.Limits{}))
	runID, err := approver.Approve(ctx, db.Pool, runstart.Request{TenantID: "acme", EnvironmentID: "prod", Plan: p})
	require.NoError(t, err)

	x := round.New(db.Pool, round.Config{})
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
