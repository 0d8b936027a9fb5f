package decide

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// ev returns an event of testRun at runSeq seq.
func ev(t *testing.T, seq int64, typ events.Type, step, attempt string, data any) events.Event {
	t.Helper()
	raw, err := events.MarshalData(data)
	require.NoError(t, err)
	return events.Event{RunID: testRun, RunSeq: seq, EventType: typ, StepID: step, LogicalAttemptID: attempt, EventData: raw}
}

func foldPlan() *plan.Plan {
	p := &plan.Plan{PlanID: "p", PlanVersion: "v1", Steps: []plan.Step{act("a"), wait("w", "go", time.Minute, "a")}}
	p.ApplyDefaults()
	return p
}

// TestFoldRecordsTheRun folds a history by hand and checks each field.
func TestFoldRecordsTheRun(t *testing.T) {
	t.Parallel()
	p := foldPlan()
	retryAt := t0.Add(time.Second)
	deadline := t0.Add(time.Minute)
	h := []events.Event{
		ev(t, 1, events.RunApproved, "", "", nil),
		ev(t, 2, events.RunStarted, "", "", nil),
		ev(t, 3, events.StepScheduled, "a", "1", nil),
		ev(t, 4, "SomethingNewer", "a", "1", map[string]int{"x": 1}),
		ev(t, 5, events.StepRetryScheduled, "a", "1", events.StepRetryScheduledData{
			Error: events.StepError{Code: "E"}, RetryAt: retryAt, NextLogicalAttemptID: "2"}),
		ev(t, 6, events.StepStarted, "a", "1", nil), // stale: attempt 1 is over
		ev(t, 7, events.RunPaused, "", "1", events.RunPausedData{}),
		ev(t, 8, events.SignalApplied, "", "1", events.SignalAppliedData{SignalID: "s1", SignalName: "go"}),
		ev(t, 9, events.StepStarted, "zz", "1", nil),  // not in the plan
		ev(t, 10, events.StepStarted, "a", "x", nil),  // not a decimal attempt
		ev(t, 11, events.SignalAccepted, "", "", nil), // the gateway's record changes nothing
	}
	s, err := Fold(p, h)
	require.NoError(t, err)
	require.Equal(t, State{
		RunID: testRun, Status: events.RunStatusPaused, Head: 11,
		Steps: map[string]StepState{
			"a": {Status: events.StepStatusPending, Attempt: 2, SeriesStart: 1, RetryAt: retryAt, Error: events.StepError{Code: "E"}},
			"w": {Status: events.StepStatusPending, Attempt: 1, SeriesStart: 1},
		},
		Signals: map[SignalRef]bool{{Name: "go", ID: "s1"}: true}, Pauses: 1, SignalsApplied: 1,
	}, s)
	require.Equal(t, []Timer{{RunID: testRun, StepID: "a", LogicalAttempt: 2, Kind: TimerRetry, DueAt: retryAt}}, s.Timers(p))

	more := []events.Event{
		ev(t, 12, events.RunResumed, "", "1", nil),
		ev(t, 13, events.StepScheduled, "a", "2", nil),
		ev(t, 14, events.StepCompleted, "a", "2", events.StepCompletedData{}),
		ev(t, 15, events.StepFailed, "a", "2", events.StepFailedData{}), // the first outcome wins
		ev(t, 16, events.StepScheduled, "w", "1", stepScheduledData{Deadline: deadline}),
		ev(t, 17, events.StepStarted, "w", "1", nil),
	}
	s2, err := s.Apply(more...)
	require.NoError(t, err)
	require.Equal(t, events.RunStatusRunning, s2.Status)
	require.Equal(t, StepState{Status: events.StepStatusSuccess, Attempt: 2, Scheduled: true, SeriesStart: 1}, s2.Steps["a"])
	require.Equal(t, []Timer{{RunID: testRun, StepID: "w", LogicalAttempt: 1, Kind: TimerWaitTimeout, DueAt: deadline}}, s2.Timers(p))
	require.Equal(t, events.StepStatusPending, s.Steps["a"].Status, "Apply leaves the state it was given alone")

	again, err := s2.Apply(append(h, more...)...)
	require.NoError(t, err)
	require.Equal(t, s2, again, "events at or below Head are skipped")
}

// TestFoldTerminalIsAbsorbing: once a run ends, later run events (from a
// misbehaving writer) do not reopen it, as in the events reducer.
func TestFoldTerminalIsAbsorbing(t *testing.T) {
	t.Parallel()
	s, err := Fold(foldPlan(), []events.Event{
		ev(t, 1, events.RunApproved, "", "", nil),
		ev(t, 2, events.RunCancelled, "", "", nil),
		ev(t, 3, events.RunResumed, "", "1", nil),
		ev(t, 4, events.RunStarted, "", "", nil),
	})
	require.NoError(t, err)
	require.Equal(t, events.RunStatusCancelled, s.Status)
	require.Equal(t, 1, s.Resumes)
}

// TestFoldErrors: Apply stops at a bad event and returns the state before it.
func TestFoldErrors(t *testing.T) {
	t.Parallel()
	p := foldPlan()
	first := ev(t, 1, events.RunApproved, "", "", nil)

	gap := ev(t, 3, events.RunStarted, "", "", nil)
	s, err := Fold(p, []events.Event{first, gap})
	var ge *events.GapError
	require.ErrorAs(t, err, &ge)
	require.Equal(t, int64(1), ge.LastEventSeq)
	require.Equal(t, int64(1), s.Head)
	require.Equal(t, events.RunStatusApproved, s.Status)

	other := ev(t, 2, events.RunStarted, "", "", nil)
	other.RunID = "0190a8e2-7b3c-7def-8123-000000000000"
	_, err = Fold(p, []events.Event{first, other})
	require.ErrorIs(t, err, events.ErrWrongRun)

	var me *events.MalformedEventError
	_, err = Fold(p, []events.Event{ev(t, 0, events.RunApproved, "", "", nil)})
	require.ErrorAs(t, err, &me)

	bad := ev(t, 2, events.StepFailed, "a", "1", nil)
	bad.EventData = json.RawMessage(`"not an object"`)
	s, err = Fold(p, []events.Event{first, bad})
	require.ErrorAs(t, err, &me)
	require.Equal(t, events.StepFailed, me.Type)
	require.Equal(t, int64(1), s.Head)
}

// TestZeroStateApply: Apply works on the zero State (no plan steps known),
// ignoring step events.
func TestZeroStateApply(t *testing.T) {
	t.Parallel()
	s, err := State{}.Apply(ev(t, 1, events.RunApproved, "", "", nil), ev(t, 2, events.StepScheduled, "a", "1", nil))
	require.NoError(t, err)
	require.Equal(t, events.RunStatusApproved, s.Status)
	require.Empty(t, s.Steps)
}
