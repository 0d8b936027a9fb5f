package projector_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/services/projector"
)

// childPlan is the plan of the child runs: one step, a, as lifecycle has.
const childPlan = `{"planId":"charge","planVersion":"c1","steps":[{"id":"a","activity":"echo"}]}`

// parentPlan has two subPlan steps, pay and ship.
const parentPlan = `{"planId":"order","planVersion":"v1","steps":[
	{"id":"pay","kind":"subPlan","plan":` + childPlan + `,"input":{}},
	{"id":"ship","kind":"subPlan","plan":` + childPlan + `,"input":{},"dependsOn":["pay"]}]}`

// approveChild approves a child run of tenant ten that step stepID of run
// parent started, with the run request id the engine derives, as the
// engine's round does, and returns its run id once it is projected.
func (s *stack) approveChild(t *testing.T, ten, parent, stepID string) string {
	t.Helper()
	p, err := plan.ParseValidated([]byte(childPlan), plan.Limits{})
	require.NoError(t, err)
	var runID string
	err = pgx.BeginFunc(t.Context(), s.db.Pool, func(tx pgx.Tx) error {
		runID, err = runstart.Approver{Journal: s.journal}.ApproveTx(t.Context(), tx, runstart.Request{Plan: p,
			TenantID: ten, ProjectID: "proj", EnvironmentID: "dev", RunRequestID: events.ChildRunRequestID(parent, stepID, 1),
			Parent: &events.RunParent{RunID: parent, StepID: stepID, LogicalAttemptID: "1", PlanVersion: "v1", Depth: 1}})
		return err
	})
	require.NoError(t, err)
	return runID
}

// family is a parent run with two children (of its steps pay and ship),
// a grandchild (of the first child), a child of another run, and a child
// of the parent in tenant other, each projected.
type family struct {
	parent, pay, ship, grandchild, cousin, elsewhere string
}

func newFamily(t *testing.T, s *stack) family {
	t.Helper()
	f := family{parent: s.approveWith(t, parentPlan, nil)}
	f.pay = s.approveChild(t, tenant, f.parent, "pay")
	f.ship = s.approveChild(t, tenant, f.parent, "ship")
	f.grandchild = s.approveChild(t, tenant, f.pay, "a")
	f.cousin = s.approveChild(t, tenant, s.approve(t, "other-parent"), "a")
	f.elsewhere = s.approveChild(t, "other", f.parent, "pay")
	for _, id := range []string{f.parent, f.pay, f.ship, f.grandchild, f.cousin} {
		s.waitRun(t, id, atSeq(1), "approved")
	}
	require.Eventually(t, func() bool {
		return len(s.list(t, otherToken, "").Runs) == 1
	}, waitFor, 10*time.Millisecond, "tenant other's child is projected")
	return f
}

// GET /v1/runs?parent=RUN_ID lists exactly the child runs of RUN_ID in the
// key's tenant, newest first, each naming its parent, in pages; other
// filters narrow it; the child's view carries its parent link and the
// parent's step its child; a parent that is not a run id is a 400.
func TestRunsListByParent(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	f := newFamily(t, s)

	children := s.list(t, readerToken, "parent="+f.parent).Runs
	require.Equal(t, []string{f.ship, f.pay}, runIDs(children))
	for _, c := range children {
		require.Equal(t, f.parent, c.ParentRunID)
		require.True(t, strings.HasPrefix(c.RunRequestID, "child:"+f.parent+":"), c.RunRequestID)
	}
	require.Equal(t, []string{f.ship, f.pay}, s.walk(t, "parent="+f.parent, 1), "pages of one")
	require.Equal(t, []string{f.grandchild}, runIDs(s.list(t, readerToken, "parent="+f.pay).Runs))
	require.Empty(t, s.list(t, readerToken, "parent="+f.grandchild).Runs)
	other := s.list(t, otherToken, "parent="+f.parent).Runs
	require.Equal(t, []string{f.elsewhere}, runIDs(other), "tenant other's own child")

	all := s.list(t, readerToken, "").Runs
	require.Len(t, all, 6, "the list without parent keeps every run")
	for _, r := range all {
		if r.RunID == f.parent {
			require.Empty(t, r.ParentRunID, "a run no step started has no parent")
		}
	}
	var raw struct {
		Runs []map[string]any `json:"runs"`
	}
	s.fetch(t, readerToken, "/v1/runs?parent="+f.pay).decode(t, &raw)
	require.Equal(t, f.pay, raw.Runs[0]["parentRunId"])

	s.appendBus(t, lifecycle(t, f.pay)...)
	s.waitRun(t, f.pay, atSeq(6), "completes")
	require.Equal(t, []string{f.pay}, runIDs(s.list(t, readerToken, "parent="+f.parent+"&status=COMPLETED").Runs))
	require.Equal(t, []string{f.ship}, runIDs(s.list(t, readerToken, "parent="+f.parent+"&status=APPROVED&plan=charge").Runs))
	require.Empty(t, s.list(t, readerToken, "parent="+f.parent+"&plan=order").Runs)
	require.Empty(t, s.list(t, readerToken, "parent="+f.parent+"&trigger=orders").Runs)

	child, _ := s.run(t, f.pay)
	require.Equal(t, &events.RunParent{RunID: f.parent, StepID: "pay", LogicalAttemptID: "1", PlanVersion: "v1", Depth: 1}, child.Parent)
	s.appendBus(t, step(t, f.parent, "", events.RunStarted, nil),
		step(t, f.parent, "pay", events.StepScheduled, events.StepScheduledData{Queue: "default", ChildRunID: f.pay}))
	v := s.waitRun(t, f.parent, atSeq(3), "schedules pay")
	require.Nil(t, v.Parent)
	require.Len(t, v.Steps, 1)
	require.Equal(t, f.pay, v.Steps[0].ChildRunID)

	for _, q := range []string{"parent=", "parent=nope", "parent=" + strings.ToUpper(f.parent), "parent={" + f.parent + "}"} {
		requireError(t, s.fetch(t, readerToken, "/v1/runs?"+q), http.StatusBadRequest, api.CodeInvalidArgument, "parent")
	}
	requireError(t, s.fetch(t, readerToken, "/v1/runs?parent="+f.parent+"&parent="+f.pay), http.StatusBadRequest,
		api.CodeInvalidArgument, "parent")
	requireError(t, s.fetch(t, readerToken, "/v1/runs?parent="+f.parent+"&tenant=other"), http.StatusForbidden,
		api.CodePermissionDenied)
}

// Rows a build older than migration 0020 projected have no parent run:
// the parent filter cannot find them until Rebuild (`weft projector
// rebuild`) records it from each child's RunApproved, and a run without
// a parent keeps none.
func TestRebuildRecordsParentRuns(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	f := newFamily(t, s)
	_, err := s.db.Pool.Exec(t.Context(), `UPDATE run_snapshots SET parent_run_id = NULL`)
	require.NoError(t, err)
	require.Empty(t, s.list(t, readerToken, "parent="+f.parent).Runs)

	r, err := projector.NewRebuilder(s.db.Pool, projector.Config{})
	require.NoError(t, err)
	st, err := r.Rebuild(t.Context())
	require.NoError(t, err)
	require.Zero(t, st.Rebuilt, "every run has its snapshot")
	require.Equal(t, []string{f.ship, f.pay}, runIDs(s.list(t, readerToken, "parent="+f.parent).Runs))
	require.Equal(t, []string{f.grandchild}, runIDs(s.list(t, readerToken, "parent="+f.pay).Runs))
	var parents int
	require.NoError(t, s.db.Pool.QueryRow(t.Context(),
		`SELECT count(*) FROM run_snapshots WHERE parent_run_id IS NOT NULL`).Scan(&parents))
	require.Equal(t, 5, parents, "the five children, and no other run")
}
