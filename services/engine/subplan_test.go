package engine_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/internal/store/planversions"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/services/engine"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// children returns the ids of the child runs of parent in the log, by
// their RunApproved's parent link.
func (s *stack) children(t *testing.T, parent string) []string {
	t.Helper()
	rows, err := s.db.Pool.Query(t.Context(), `SELECT run_id::text FROM run_events
		WHERE event_type = 'RunApproved' AND event_data->'parent'->>'runId' = $1 ORDER BY run_id`, parent)
	require.NoError(t, err)
	ids, err := collectStrings(rows)
	require.NoError(t, err)
	return ids
}

// collectStrings reads one text column.
func collectStrings(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
	Close()
}) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// snapshot projects the run's log.
func (s *stack) snapshot(t *testing.T, runID string) events.RunSnapshot {
	t.Helper()
	evs, err := s.log.EventsFetchAfter(t.Context(), runID, 0, 0)
	require.NoError(t, err)
	snap, err := events.Project(runID, evs)
	require.NoError(t, err)
	return snap
}

// stepOf returns step id of snap.
func stepOf(t *testing.T, snap events.RunSnapshot, id string) events.StepSnapshot {
	t.Helper()
	for _, st := range snap.Steps {
		if st.StepID == id {
			return st
		}
	}
	t.Fatalf("run %s has no step %s", snap.RunID, id)
	return events.StepSnapshot{}
}

const childOfEcho = `{"planId":"charge","planVersion":"c1","steps":[{"id":"work","activity":"echo","input":{"amount":"${{ input.amount }}"}}],
	"output":"${{ steps.work.output }}"}`

// A subPlan step starts one child run, linked both ways, whose output
// becomes the step's, and the parent goes on from it.
func TestSubPlanRunsAChildAndTakesItsOutput(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, parsePlan(t, `{"planId":"order","planVersion":"1","steps":[
		{"id":"pay","kind":"subPlan","plan":`+childOfEcho+`,"input":{"amount":5},"labels":{"team":"pay"}},
		{"id":"ship","activity":"echo","dependsOn":["pay"],"input":{"paid":"${{ steps.pay.output.amount }}"}}],
		"output":"${{ steps.ship.output }}"}`))
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	var done events.RunCompletedData
	require.NoError(t, evs[len(evs)-1].Data(&done))
	require.JSONEq(t, `{"paid":5}`, string(done.Output))

	kids := s.children(t, runID)
	require.Len(t, kids, 1, "one child run")
	pay := stepOf(t, s.snapshot(t, runID), "pay")
	require.Equal(t, kids[0], pay.ChildRunID, "the parent's step names its child")
	child := s.snapshot(t, kids[0])
	require.Equal(t, events.RunStatusCompleted, child.Status)
	require.Equal(t, &events.RunParent{RunID: runID, StepID: "pay", LogicalAttemptID: "1", PlanVersion: "1", Depth: 1}, child.Parent)
	require.Equal(t, map[string]string{"team": "pay"}, child.Labels, "the child carries its step's labels")
	require.Contains(t, types(evs), events.ChildRunEnded)
}

// A child that fails fails its step with an error that names the child,
// and the parent fails.
func TestFailedChildFailsItsStep(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", failOn("work", "CARD_DECLINED"))
	runID := s.start(t, parsePlan(t, `{"planId":"order","planVersion":"1","steps":[
		{"id":"pay","kind":"subPlan","plan":`+childOfEcho+`,"input":{"amount":5}}]}`))
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunFailed, terminal(evs))
	pay := stepOf(t, s.snapshot(t, runID), "pay")
	require.Equal(t, decide.CodeChildRunFailed, pay.Error.Code)
	require.Contains(t, pay.Error.Message, pay.ChildRunID)
	require.Contains(t, pay.Error.Message, "CARD_DECLINED")
	require.Equal(t, events.RunStatusFailed, s.snapshot(t, pay.ChildRunID).Status)
}

// pushPlan registers doc as a plan version of project p1 (of no tenant,
// whose tasks go to the queue rawWorker serves).
func (s *stack) pushPlan(t *testing.T, doc string) {
	t.Helper()
	v, err := plan.ParseValidated([]byte(doc), plan.Limits{})
	require.NoError(t, err)
	sum := sha256.Sum256(v.JSON())
	_, err = planversions.Insert(t.Context(), s.db.Pool, planversions.Key{ProjectID: "p1",
		PlanID: v.PlanID(), PlanVersion: v.PlanVersion()}, v.JSON(), sum[:], time.Now().UTC())
	require.NoError(t, err)
}

// startInProject approves a run of p in project p1.
func (s *stack) startInProject(t *testing.T, p *plan.Plan) string {
	t.Helper()
	return s.approve(t, runstart.Request{ProjectID: "p1", Plan: validated(t, p)})
}

// A subPlan step by planRef runs the registered version "latest" names
// when the child starts; a ref to nothing, and an input the child plan's
// schema refuses, fail the step with CHILD_RUN_REFUSED and start no
// child.
func TestSubPlanByPlanRef(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", echo)
	s.pushPlan(t, strings.Replace(childOfEcho, `"planVersion":"c1"`, `"planVersion":"c2",
		"inputSchema":{"type":"object","properties":{"amount":{"type":"integer","minimum":1}},"required":["amount"]}`, 1))
	parent := func(ref, input string) *plan.Plan {
		return parsePlan(t, `{"planId":"order","planVersion":"1","steps":[
			{"id":"pay","kind":"subPlan","planRef":`+ref+`,"input":`+input+`}],"output":"${{ steps.pay.output }}"}`)
	}
	ok := s.startInProject(t, parent(`{"planId":"charge","planVersion":"latest"}`, `{"amount":5}`))
	evs := s.waitTerminal(t, ok)
	require.Equal(t, events.RunCompleted, terminal(evs))
	kid := stepOf(t, s.snapshot(t, ok), "pay").ChildRunID
	kevs, err := s.log.EventsFetchAfter(t.Context(), kid, 0, 1)
	require.NoError(t, err)
	var approved events.RunApprovedData
	require.NoError(t, kevs[0].Data(&approved))
	require.Equal(t, "c2", approved.PlanVersion, "latest resolved when the child started")
	require.Equal(t, "p1", approved.ProjectID)

	for name, tc := range map[string]struct{ ref, input, says string }{
		"unknown ref": {`{"planId":"charge","planVersion":"nope"}`, `{"amount":5}`, "no such plan version"},
		"bad input":   {`{"planId":"charge","planVersion":"c2"}`, `{"amount":0}`, "input/amount: minimum"},
	} {
		runID := s.startInProject(t, parent(tc.ref, tc.input))
		require.Equal(t, events.RunFailed, terminal(s.waitTerminal(t, runID)), name)
		pay := stepOf(t, s.snapshot(t, runID), "pay")
		require.Equal(t, decide.CodeChildRunRefused, pay.Error.Code, name)
		require.Contains(t, pay.Error.Message, tc.says, name)
		require.Empty(t, s.children(t, runID), "%s: no child was started", name)
	}
}

// nestedPlan returns a plan whose subPlan steps nest depth levels of child
// runs, the deepest waiting for signal "go" when wait is set, else
// running echo.
func nestedPlan(depth int, wait bool) string {
	leaf := `{"planId":"leaf","planVersion":"1","steps":[{"id":"work","activity":"echo"}]}`
	if wait {
		leaf = `{"planId":"leaf","planVersion":"1","steps":[{"id":"work","kind":"waitSignal","signal":"go"}]}`
	}
	doc := leaf
	for i := range depth {
		doc = fmt.Sprintf(`{"planId":"level%d","planVersion":"1","steps":[{"id":"down","kind":"subPlan","plan":%s}]}`, depth-i-1, doc)
	}
	return doc
}

// Cancelling a parent cancels its running child, whose cancellation
// cancels its own: three levels end CANCELLED.
func TestParentCancelReachesEveryLevel(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	top := s.start(t, parsePlan(t, nestedPlan(2, true)))
	runs := []string{top}
	for len(runs) < 3 {
		last := runs[len(runs)-1]
		require.Eventually(t, func() bool { return len(s.children(t, last)) == 1 }, waitFor, 10*time.Millisecond)
		runs = append(runs, s.children(t, last)[0])
	}
	s.waitEvent(t, runs[2], events.StepStarted) // the leaf waits for its signal
	s.signal(t, top, plan.SignalCancel, "stop", "")
	for _, id := range runs {
		require.Equal(t, events.RunCancelled, terminal(s.waitTerminal(t, id)), "run %s", id)
	}
	for _, id := range runs[:2] {
		evs, err := s.log.EventsFetchAfter(t.Context(), id, 0, 0)
		require.NoError(t, err)
		require.NotContains(t, types(evs), events.ChildRunEnded, "a child's end is not logged after its parent's (run %s)", id)
	}
}

// The engine's MaxRunDepth is inclusive: children may nest that deep, and
// a step that would start one deeper fails, naming the limit.
func TestChildRunDepthLimit(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{MaxRunDepth: 2})
	rawWorker(t, s.js, "default", echo)
	atLimit := s.start(t, parsePlan(t, nestedPlan(2, false)))
	require.Equal(t, events.RunCompleted, terminal(s.waitTerminal(t, atLimit)))

	past := s.start(t, parsePlan(t, nestedPlan(3, false)))
	require.Equal(t, events.RunFailed, terminal(s.waitTerminal(t, past)))
	mid := s.children(t, past)[0]
	deep := s.children(t, mid)[0]
	down := stepOf(t, s.snapshot(t, deep), "down")
	require.Equal(t, decide.CodeChildRunRefused, down.Error.Code)
	require.Contains(t, down.Error.Message, "depth 3, more than the engine's limit of 2")
	require.Empty(t, s.children(t, deep))
}

// The engine dies in the round that starts a child, before its commit
// and after it (before the ack): a fresh engine finishes the parent with
// exactly one child.
func TestSubPlanCrashStartsOneChild(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"before-commit:1", "after-commit:1", "after-commit:2"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			s := newStack(t)
			rawWorker(t, s.js, "default", echo)
			runID := s.start(t, parsePlan(t, `{"planId":"order","planVersion":"1","steps":[
				{"id":"pay","kind":"subPlan","plan":`+childOfEcho+`,"input":{"amount":5}}]}`))
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childDBEnv+"="+s.db.URL, childNATSEnv+"="+s.nats.URL(), childCrashEnv+"="+point)
			out, err := cmd.CombinedOutput()
			var exitErr *exec.ExitError
			require.ErrorAs(t, err, &exitErr, "child output:\n%s", out)
			require.Equal(t, childExit, exitErr.ExitCode(), "output:\n%s", out)

			s.runEngine(t, crashConfig)
			evs := s.waitTerminal(t, runID)
			require.Equal(t, events.RunCompleted, terminal(evs))
			requireOncePerAttempt(t, evs)
			require.Len(t, s.children(t, runID), 1, "exactly one child")
		})
	}
}

// forEach over a subPlan step starts one child run per element, and the
// step's output lists theirs in element order.
func TestForEachSubPlanRunsAChildPerElement(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, parsePlan(t, `{"planId":"orders","planVersion":"1","steps":[
		{"id":"pay","kind":"subPlan","forEach":"${{ [3, 4, 5] }}","maxParallel":2,"plan":`+childOfEcho+`,
		 "input":{"amount":"${{ item }}"}}],"output":"${{ steps.pay.output }}"}`))
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	var done events.RunCompletedData
	require.NoError(t, evs[len(evs)-1].Data(&done))
	require.JSONEq(t, `[{"amount":3},{"amount":4},{"amount":5}]`, string(done.Output))
	require.Len(t, s.children(t, runID), 3)
}

// A child run is never held by its environment's admission limit: a
// parent that holds the environment's one place, waiting for its child,
// would otherwise wait for ever.
func TestChildRunIsNotHeldByTheAdmissionLimit(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{Admission: admission.Limits{Default: admission.Limit{MaxConcurrentRuns: 1, Policy: admission.Queue}}})
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, parsePlan(t, nestedPlan(2, false)))
	require.Equal(t, events.RunCompleted, terminal(s.waitTerminal(t, runID)))
	kid := s.children(t, runID)[0]
	evs, err := s.log.EventsFetchAfter(t.Context(), kid, 0, 0)
	require.NoError(t, err)
	require.NotContains(t, types(evs), events.RunQueued)
}
