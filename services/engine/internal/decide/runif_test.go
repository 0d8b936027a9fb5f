package decide

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// withRunIf returns s running after its dependencies' outcomes per runIf,
// handling the failures of handles.
func withRunIf(s plan.Step, runIf plan.RunIf, handles ...string) plan.Step {
	s.RunIf, s.Handles = runIf, handles
	return s
}

// Each runIf after a failure: allSucceeded steps are skipped, allDone and
// anyFailed ones run, and the run still fails, naming the failed step,
// once they ended.
func TestRunIfAfterAFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, act("a"),
		act("next", "a"),
		withRunIf(act("cleanup", "a"), plan.RunIfAllDone),
		withRunIf(act("compensate", "a"), plan.RunIfAnyFailed),
		act("after-cleanup", "cleanup"),
	)
	b.decide(approve())
	b.decide(start("a", 1))
	d := b.decide(fail("a", 1, false))
	require.Equal(t, []string{"StepFailed a 1", "StepSkipped next 1",
		"StepScheduled cleanup 1", "StepScheduled compensate 1"}, descs(d.Events))
	b.decide(start("cleanup", 1))
	d = b.decide(done("cleanup", 1))
	require.Equal(t, []string{"StepCompleted cleanup 1"}, descs(d.Events),
		"after-cleanup is allSucceeded: it waits while the run fails, and is skipped at the end")
	b.decide(start("compensate", 1))
	d = b.decide(done("compensate", 1))
	require.Equal(t, []string{"StepCompleted compensate 1", "StepSkipped after-cleanup 1", "RunFailed 1"}, descs(d.Events))
	require.Equal(t, "a", d.Events[2].Data.(events.RunFailedData).StepID, "no handles: the failure still fails the run")
}

// An anyFailed step that handles the failure keeps it from failing the
// run once it succeeds; the other steps go on meanwhile.
func TestRunIfAnyFailedHandles(t *testing.T) {
	t.Parallel()
	b := setup(t, act("charge"), act("other"),
		withRunIf(act("refund", "charge"), plan.RunIfAnyFailed, "charge"),
		act("after-other", "other"),
	)
	b.decide(approve())
	b.decide(start("charge", 1))
	d := b.decide(fail("charge", 1, false))
	require.Equal(t, []string{"StepFailed charge 1", "StepScheduled refund 1"}, descs(d.Events))
	b.decide(start("other", 1))
	d = b.decide(done("other", 1))
	require.Equal(t, []string{"StepCompleted other 1", "StepScheduled after-other 1"}, descs(d.Events),
		"a failure being handled does not stop the run")
	b.decide(start("after-other", 1))
	b.decide(done("after-other", 1))
	b.decide(start("refund", 1))
	d = b.decide(done("refund", 1))
	require.Equal(t, []string{"StepCompleted refund 1", "RunCompleted"}, descs(d.Events))
}

// A handler that fails leaves the failure it handled standing: the run
// fails, naming the first failure.
func TestRunIfHandlerThatFails(t *testing.T) {
	t.Parallel()
	b := setup(t, act("charge"), withRunIf(act("refund", "charge"), plan.RunIfAnyFailed, "charge"))
	b.decide(approve())
	b.decide(start("charge", 1))
	b.decide(fail("charge", 1, false))
	b.decide(start("refund", 1))
	d := b.decide(fail("refund", 1, false))
	require.Equal(t, []string{"StepFailed refund 1", "RunFailed 1"}, descs(d.Events))
	require.Equal(t, "charge", d.Events[1].Data.(events.RunFailedData).StepID)
}

// With no failure, an anyFailed step is skipped, as a condition is, and an
// allDone step runs after a skipped dependency.
func TestRunIfWithoutFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, act("a"), withIf(act("maybe", "a"), "false"),
		withRunIf(act("compensate", "a"), plan.RunIfAnyFailed),
		withRunIf(act("report", "maybe"), plan.RunIfAllDone),
	)
	b.decide(approve())
	b.decide(start("a", 1))
	d := b.decide(done("a", 1))
	require.Equal(t, []string{"StepCompleted a 1", "StepSkipped maybe 1", "StepSkipped compensate 1",
		"StepScheduled report 1"}, descs(d.Events))
	require.Equal(t, stepSkippedData{StepSkippedData: events.StepSkippedData{Reason: "no dependency failed"}, Condition: "compensate"},
		d.Events[2].Data)
	b.decide(start("report", 1))
	d = b.decide(done("report", 1))
	require.Equal(t, []string{"StepCompleted report 1", "RunCompleted"}, descs(d.Events))
}
