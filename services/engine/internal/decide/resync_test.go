package decide

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

const grace = time.Minute

func resync(at time.Time) Input { return Resync{TaskGrace: grace, Now: at} }

func TestResync(t *testing.T) {
	t.Parallel()
	runCases(t, []roundCase{
		{name: "an approved run the bus never started is started", steps: linear,
			in: resync(t0.Add(time.Hour)), want: []string{"RunStarted", "StepScheduled a 1"}, tasks: []string{"a/1"}},
		{name: "a task waiting within its timeout is left alone", steps: linear, given: []Input{approve()},
			in: resync(t0.Add(plan.DefaultTimeout))},
		{name: "a task not started within its timeout is sent again", steps: linear, given: []Input{approve()},
			in: resync(t0.Add(plan.DefaultTimeout + time.Second)), tasks: []string{"a/1"}},
		{name: "a started attempt within its timeout and grace is left alone", steps: linear,
			given: []Input{approve(), start("a", 1)}, in: resync(t0.Add(plan.DefaultTimeout + grace))},
		{name: "a started attempt silent past timeout and grace is sent again", steps: linear,
			given: []Input{approve(), start("a", 1)}, in: resync(t0.Add(time.Hour)), tasks: []string{"a/1"}},
		{name: "a finished run needs nothing", steps: linear,
			given: []Input{approve(), done("a", 1), done("b", 1)}, in: resync(t0.Add(time.Hour))},
	})
}

func TestResyncResendsUnderAFreshMark(t *testing.T) {
	t.Parallel()
	b := setup(t, linear...)
	b.decide(approve())
	d := b.decide(resync(t0.Add(time.Hour)))
	require.Len(t, d.Tasks, 1)
	require.True(t, d.Tasks[0].Resend, "a resent task must get a new dedupe id")
}

// A signal accepted while the bus lost its message is applied by the
// resync, once.
func TestResyncAppliesPendingSignals(t *testing.T) {
	t.Parallel()
	b := setup(t, linear...)
	b.decide(approve())
	for _, id := range []string{"s1", "s2"} {
		b.append(events.Spec{RunID: testRun, Type: events.SignalAccepted, LogicalAttemptID: id, PlanVersion: "v1",
			Data: events.SignalAcceptedData{SignalName: "PAUSE", SignalID: id, Payload: json.RawMessage(`{}`)}})
	}
	require.Len(t, b.s.Pending, 2)

	d := b.decide(resync(t0.Add(time.Second)))
	require.Equal(t, []string{"RunPaused 1", "SignalApplied 1", "SignalApplied 2"}, descs(d.Events))
	require.Empty(t, b.s.Pending, "both are applied")
	require.Equal(t, events.RunStatusPaused, b.s.Status)
	require.Equal(t, events.SignalCodeRunNotRunning, applied(t, Decision{Events: d.Events[2:]}).Code, "the second PAUSE finds the run paused")

	require.True(t, b.decide(resync(t0.Add(2*time.Second))).Empty(), "nothing is pending any more")
	require.True(t, b.decide(SignalAccepted{SignalID: "s1", Name: "PAUSE"}).Empty(), "a late delivery is a duplicate")
}
