package decide

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

// childPlan is an inline plan of one activity.
func childPlan() *plan.Plan {
	return &plan.Plan{PlanID: "child", PlanVersion: "c1", Steps: []plan.Step{act("work")}}
}

// sub returns a subPlan step running childPlan inline with input.
func sub(id, input string, deps ...string) plan.Step {
	return plan.Step{ID: id, Kind: plan.KindSubPlan, Plan: childPlan(), Input: json.RawMessage(input), DependsOn: deps}
}

// childEnd is the ChildEnded of attempt 1 of step id's child, appended
// to the log as the child's round appends it.
func (b *bundle) childEnd(id string, st StepState, data events.ChildRunEndedData) ChildEnded {
	b.t.Helper()
	data.ChildRunID = st.ChildRunID
	b.append(events.Spec{RunID: testRun, StepID: id, LogicalAttemptID: attemptID(st.Attempt), Type: events.ChildRunEnded,
		PlanVersion: "v1", Data: data, EmittedAt: b.now})
	return ChildEnded{StepID: id, LogicalAttempt: st.Attempt, ChildRunEndedData: data}
}

// A subPlan step schedules and starts at once, names its child and asks
// for its start; the child's end completes it with the child's output.
func TestSubPlanStartsAChildAndCompletesWithItsOutput(t *testing.T) {
	t.Parallel()
	b := setup(t, sub("pay", `{"amount":5}`), act("after", "pay"))
	d := b.decide(approve())
	require.Equal(t, []string{"RunStarted", "StepScheduled pay 1", "StepStarted pay 1"}, descs(d.Events))
	require.Empty(t, d.Tasks, "a subPlan step sends no task")
	require.Len(t, d.Starts, 1)
	st := b.s.Steps["pay"]
	start := d.Starts[0]
	require.Equal(t, events.ChildRunID(testRun, "pay", 1, t0), start.RunID)
	require.Equal(t, st.ChildRunID, start.RunID)
	require.Equal(t, events.ChildRunRequestID(testRun, "pay", 1), start.RunRequestID)
	require.JSONEq(t, `{"amount":5}`, string(start.Input))
	require.Equal(t, events.RunParent{RunID: testRun, StepID: "pay", LogicalAttemptID: "1", PlanVersion: "v1", Depth: 1}, start.Parent)

	require.True(t, Decide(b.p, b.s, done("pay", 1)).Empty(), "a worker's result does not end a subPlan step")

	d = b.decide(b.childEnd("pay", st, events.ChildRunEndedData{Status: events.RunStatusCompleted, Output: json.RawMessage(`{"charged":5}`)}))
	require.Equal(t, []string{"StepCompleted pay 1", "StepScheduled after 1"}, descs(d.Events))
	require.Equal(t, `{"charged":5}`, b.s.Steps["pay"].Output)
	require.Empty(t, b.s.ChildEnds)
	require.True(t, Decide(b.p, b.s, b.stamp(ChildEnded{StepID: "pay", LogicalAttempt: 1,
		ChildRunEndedData: events.ChildRunEndedData{ChildRunID: st.ChildRunID, Status: events.RunStatusCompleted}})).Empty(),
		"a second end of the same child decides nothing")
}

// A child's end in the log ends its step in the run's next round, whatever
// that round's input: a lost bus message costs a round, not the step.
func TestChildEndInTheLogActsOnAnyRound(t *testing.T) {
	t.Parallel()
	b := setup(t, sub("pay", `{}`), act("side"))
	b.decide(approve())
	b.childEnd("pay", b.s.Steps["pay"], events.ChildRunEndedData{Status: events.RunStatusCompleted})
	require.Len(t, b.s.ChildEnds, 1)
	d := b.decide(done("side", 1))
	require.Equal(t, []string{"StepStarted side 1", "StepCompleted side 1", "StepCompleted pay 1", "RunCompleted"}, descs(d.Events))
}

// A child that fails fails its step, not retried by default, naming the
// child; the run fails.
func TestFailedChildFailsItsStep(t *testing.T) {
	t.Parallel()
	b := setup(t, sub("pay", `{}`))
	b.decide(approve())
	st := b.s.Steps["pay"]
	cause := events.StepError{Code: "CARD_DECLINED", Message: "no"}
	d := b.decide(b.childEnd("pay", st, events.ChildRunEndedData{Status: events.RunStatusFailed, Error: &cause, Reason: "step \"work\" failed"}))
	require.Equal(t, []string{"StepFailed pay 1", "RunFailed 1"}, descs(d.Events))
	e := b.s.Steps["pay"].Error
	require.Equal(t, CodeChildRunFailed, e.Code)
	require.Contains(t, e.Message, st.ChildRunID)
	require.Contains(t, e.Message, "CARD_DECLINED")
}

// With a retry policy, a failed child is retried with a new child.
func TestRetriedSubPlanStartsANewChild(t *testing.T) {
	t.Parallel()
	b := setup(t, withRetry(sub("pay", `{}`), 2, 0))
	b.decide(approve())
	first := b.s.Steps["pay"].ChildRunID
	d := b.decide(b.childEnd("pay", b.s.Steps["pay"], events.ChildRunEndedData{Status: events.RunStatusFailed, Reason: "boom"}))
	require.Equal(t, []string{"StepRetryScheduled pay 1", "StepScheduled pay 2", "StepStarted pay 2"}, descs(d.Events))
	require.Len(t, d.Starts, 1)
	require.NotEqual(t, first, d.Starts[0].RunID)
	require.Equal(t, events.ChildRunRequestID(testRun, "pay", 2), d.Starts[0].RunRequestID)
}

// A child run tells its parent of its end, keyed as the parent's step
// attempt, with its output.
func TestChildRunTellsItsParent(t *testing.T) {
	t.Parallel()
	parent := events.RunParent{RunID: "0190a8e2-7b3c-7def-8123-000000000001", StepID: "pay", LogicalAttemptID: "3", PlanVersion: "pv", Depth: 2}
	b := setupWith(t, events.RunApprovedData{Parent: &parent}, act("work"))
	b.p.Output = "${{ steps.work.output }}"
	b.decide(approve())
	require.Equal(t, parent, b.s.Run.Parent)
	d := b.decide(doneOut("work", 1, `{"x":1}`))
	require.Len(t, d.ToOtherRuns, 1)
	tell := d.ToOtherRuns[0]
	require.Equal(t, parent.RunID, tell.RunID)
	require.Equal(t, "pay", tell.StepID)
	require.Equal(t, "3", tell.LogicalAttemptID)
	require.Equal(t, "pv", tell.PlanVersion)
	require.Equal(t, events.ChildRunEnded, tell.Type)
	data := tell.Data.(events.ChildRunEndedData)
	require.Equal(t, events.RunStatusCompleted, data.Status)
	require.Equal(t, testRun, data.ChildRunID)
}

// A cancelled parent cancels its running children whose step says
// cancel, and lets those whose step says abandon run on.
func TestCancelledParentCancelsItsChildren(t *testing.T) {
	t.Parallel()
	kept := sub("kept", `{}`)
	kept.ParentClose = plan.ParentCloseAbandon
	b := setup(t, sub("pay", `{}`), kept)
	b.decide(approve())
	d := b.decide(sig(1, plan.SignalCancel, ""))
	require.Len(t, d.ToOtherRuns, 1)
	c := d.ToOtherRuns[0]
	require.Equal(t, b.s.Steps["pay"].ChildRunID, c.RunID)
	require.Equal(t, events.SignalAccepted, c.Type)
	data := c.Data.(events.SignalAcceptedData)
	require.Equal(t, plan.SignalCancel, data.SignalName)
	require.Equal(t, ParentClosedSignalID(testRun), data.SignalID)
}

// A failure no step handles cancels the running children at once, so
// that the failing run can end.
func TestFailingParentCancelsItsChildren(t *testing.T) {
	t.Parallel()
	b := setup(t, sub("pay", `{}`), act("side"))
	b.decide(approve())
	d := b.decide(fail("side", 1, false))
	require.Equal(t, []string{"StepStarted side 1", "StepFailed side 1"}, descs(d.Events), "the run waits for its child")
	require.Len(t, d.ToOtherRuns, 1)
	require.Equal(t, b.s.Steps["pay"].ChildRunID, d.ToOtherRuns[0].RunID)
	d = b.decide(b.childEnd("pay", b.s.Steps["pay"], events.ChildRunEndedData{Status: events.RunStatusCancelled, Reason: "parent"}))
	require.Equal(t, []string{"StepFailed pay 1", "RunFailed 1"}, descs(d.Events))
	require.Equal(t, CodeChildRunCancelled, b.s.Steps["pay"].Error.Code)
	require.Empty(t, d.ToOtherRuns, "the child ended: nothing more to cancel")
	end := d.Events[len(d.Events)-1].Data.(events.RunFailedData)
	require.Equal(t, "side", end.StepID, "the run failed because side failed; pay failed because the failing run cancelled its child")
}

// A child cancelled from outside fails its step, and that failure, the
// only one, fails the run.
func TestCancelledChildAloneFailsTheRun(t *testing.T) {
	t.Parallel()
	b := setup(t, sub("pay", `{}`))
	b.decide(approve())
	d := b.decide(b.childEnd("pay", b.s.Steps["pay"], events.ChildRunEndedData{Status: events.RunStatusCancelled, Reason: "an operator"}))
	require.Equal(t, []string{"StepFailed pay 1", "RunFailed 1"}, descs(d.Events))
	require.Equal(t, "pay", d.Events[len(d.Events)-1].Data.(events.RunFailedData).StepID)
}

// A child the shell could not start fails its step at once, for good.
func TestRefusedChildFailsItsStep(t *testing.T) {
	t.Parallel()
	b := setup(t, withRetry(sub("pay", `{}`), 3, 0))
	d := Decide(b.p, b.s, b.stamp(approve()))
	d = After(b.p, b.s, d, ChildRunRefused(d.Starts[0], "planRef x@1: no such plan version", t0))
	require.Equal(t, []string{"RunStarted", "StepScheduled pay 1", "StepStarted pay 1", "StepFailed pay 1", "RunFailed 1"}, descs(d.Events))
	b.append(d.Events...)
	require.Equal(t, CodeChildRunRefused, b.s.Steps["pay"].Error.Code)
}

// A forEach subPlan step starts one child per element, at most
// maxParallel at once, and completes with their outputs in order; a
// failed element under failFast cancels the running children.
func TestForEachSubPlanStartsAChildPerElement(t *testing.T) {
	t.Parallel()
	s := sub("pay", `{"n":"${{ item }}"}`)
	s.ForEach, s.MaxParallel = "[1, 2, 3]", 2
	b := setup(t, s)
	d := b.decide(approve())
	require.Len(t, d.Starts, 2, "maxParallel children start")
	require.Equal(t, "pay[0]", d.Starts[0].StepID)
	require.JSONEq(t, `{"n":1}`, string(d.Starts[0].Input))
	require.Empty(t, d.Tasks)

	el := func(i int) StepState { st, _ := b.s.stepState(events.ChildStepID("pay", i)); return st }
	d = b.decide(b.childEnd("pay[0]", el(0), events.ChildRunEndedData{Status: events.RunStatusCompleted, Output: json.RawMessage(`"a"`)}))
	require.Len(t, d.Starts, 1, "the third child starts when the first ends")
	require.Equal(t, "pay[2]", d.Starts[0].StepID)
	b.decide(b.childEnd("pay[1]", el(1), events.ChildRunEndedData{Status: events.RunStatusCompleted, Output: json.RawMessage(`"b"`)}))
	d = b.decide(b.childEnd("pay[2]", el(2), events.ChildRunEndedData{Status: events.RunStatusCompleted, Output: json.RawMessage(`"c"`)}))
	require.Contains(t, descs(d.Events), "RunCompleted")
	require.Equal(t, `["a","b","c"]`, b.s.Steps["pay"].Output)

	f := sub("pay", `{}`)
	f.ForEach = "[1, 2]"
	b = setup(t, f)
	b.decide(approve())
	d = b.decide(b.childEnd("pay[0]", el(0), events.ChildRunEndedData{Status: events.RunStatusFailed, Reason: "boom"}))
	require.Len(t, d.ToOtherRuns, 1, "the running child is cancelled")
	require.Equal(t, el(1).ChildRunID, d.ToOtherRuns[0].RunID)
	require.Equal(t, CodeForEachFailed, b.s.Steps["pay"].Error.Code)
	require.Empty(t, d.Cancels, "no worker is asked to stop a child run")
}

// TestPersistedGoldenCheckpointChildRun: a checkpoint of a child run with
// a subPlan step in flight and its child's end not yet acted on records
// the parent link, the step's child and the end, byte for byte as
// testdata/persisted/Checkpoint_childRun.json holds it, and today's reader
// restores the same state.
func TestPersistedGoldenCheckpointChildRun(t *testing.T) {
	t.Parallel()
	parent := events.RunParent{RunID: "0190a8e2-7b3c-7def-8123-000000000001", StepID: "pay", LogicalAttemptID: "1", PlanVersion: "pv", Depth: 1}
	b := setupWith(t, events.RunApprovedData{Parent: &parent}, sub("sub", `{}`))
	b.decide(approve())
	b.childEnd("sub", b.s.Steps["sub"], events.ChildRunEndedData{Status: events.RunStatusCompleted, Output: json.RawMessage(`{"ok":true}`)})
	require.Len(t, b.s.ChildEnds, 1)
	written, err := MarshalCheckpoint(b.p, b.s)
	require.NoError(t, err)
	golden := goldentest.Compare(t, filepath.Join("testdata", "persisted", "Checkpoint_childRun.json"), written)
	got, err := RestoreCheckpoint(b.p, golden)
	require.NoError(t, err)
	require.Equal(t, b.s, got)
}

// RETRY_STEP of a failed subPlan step reopens the run and starts a new
// child for the step's next attempt.
func TestRetryStepOfASubPlanStepStartsANewChild(t *testing.T) {
	t.Parallel()
	b := setup(t, sub("pay", `{}`))
	b.decide(approve())
	first := b.s.Steps["pay"].ChildRunID
	b.decide(b.childEnd("pay", b.s.Steps["pay"], events.ChildRunEndedData{Status: events.RunStatusFailed, Reason: "boom"}))
	require.Equal(t, events.RunStatusFailed, b.s.Status)
	d := b.decide(retryStep(1, "pay"))
	require.Len(t, d.Starts, 1)
	require.Equal(t, 2, d.Starts[0].LogicalAttempt)
	require.NotEqual(t, first, d.Starts[0].RunID)
	require.Equal(t, events.RunStatusRunning, b.s.Status)
}
