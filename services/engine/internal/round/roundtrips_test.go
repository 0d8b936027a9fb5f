package round_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/engine/internal/decide"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// A round that appends events and dispatches a task costs three round
// trips (docs/engine.md, "Three round trips"): BEGIN with the load of its
// run; its writes, the appends in one statement with its engine_runs row;
// and the outbox rows of its task and its events with COMMIT. A batch of
// rounds costs the same three.
func TestRoundIsThreeRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := weftest.NewDB(t)
	pool, calls := db.CountedPool(t)
	approver := runstart.Approver{Journal: journal.New(eventlog.New(pool))}
	p, err := (&plan.Plan{PlanID: "one", PlanVersion: "1", Steps: []plan.Step{{ID: "a", Activity: "echo"}}}).Validated(plan.Limits{})
	require.NoError(t, err)
	runs := make([]string, 4)
	for i := range runs {
		runs[i], err = approver.Approve(ctx, pool, runstart.Request{EnvironmentID: "env", Plan: p})
		require.NoError(t, err)
	}
	x := newRunner(pool, round.Config{})
	now := time.Now().UTC()
	_, err = x.Run(ctx, round.Round{RunID: runs[0], Input: decide.RunApproved{Now: now}}) // prepares the statements
	require.NoError(t, err)

	before := calls.N()
	out, err := x.Run(ctx, round.Round{RunID: runs[1], Input: decide.RunApproved{Now: now}})
	require.NoError(t, err)
	require.NotZero(t, out.Appended)
	require.NotEmpty(t, out.Decision.Tasks)
	require.Equal(t, 3, calls.N()-before, "one round")

	before = calls.N()
	results, err := x.RunBatch(ctx, []round.Round{
		{RunID: runs[2], Input: decide.RunApproved{Now: now}},
		{RunID: runs[3], Input: decide.RunApproved{Now: now}},
	})
	require.NoError(t, err)
	for i, res := range results {
		require.NoError(t, res.Err, "round %d", i)
		require.NotZero(t, res.Appended, "round %d", i)
	}
	require.Equal(t, 3, calls.N()-before, "a batch of two rounds")
}
