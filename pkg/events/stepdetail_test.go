package events

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// detailEvents numbers evs as one run's log, a second apart.
func detailEvents(evs ...Event) []Event {
	for i := range evs {
		evs[i].SchemaVersion, evs[i].RunID, evs[i].RunSeq = 1, goldenRun, int64(i+1)
		evs[i].EmittedAt = goldenT0.Add(time.Duration(i+1) * time.Second)
	}
	return evs
}

func stepEv(typ Type, step, logical, engine, data string) Event {
	return Event{EventType: typ, StepID: step, LogicalAttemptID: logical, EngineAttemptID: engine, EventData: json.RawMessage(data)}
}

func at(seq int) *time.Time { return timePtr(goldenT0.Add(time.Duration(seq) * time.Second)) }

// TestStepDetailsAttempts: a retried step's attempts, each with its times,
// worker and error, and the input and output of the attempt that ran last.
func TestStepDetailsAttempts(t *testing.T) {
	t.Parallel()
	got, err := StepDetails(detailEvents(
		Event{EventType: RunApproved, EventData: json.RawMessage(`{"plan":{"steps":[{"id":"a","input":{"static":true}}]}}`)},
		stepEv(StepScheduled, "a", "1", "", `{"input":{"n":1}}`),
		stepEv(StepStarted, "a", "1", "1", `{"workerId":"w1"}`),
		stepEv(StepStarted, "a", "1", "2", `{"workerId":"w2"}`),
		stepEv(StepFailed, "a", "1", "2", `{"error":{"code":"TIMEOUT","message":"slow","retryable":true}}`),
		stepEv(StepRetryScheduled, "a", "1", "", `{"error":{"code":"TIMEOUT","message":"slow","retryable":true},"retryAt":"2024-07-01T12:01:00Z","nextLogicalAttemptId":"2"}`),
		stepEv(StepScheduled, "a", "2", "", `{"input":{"n":2}}`),
		stepEv(StepStarted, "a", "2", "1", `{"workerId":"w3"}`),
		stepEv(StepCompleted, "a", "2", "1", `{"output":{"ok":true}}`),
	))
	require.NoError(t, err)
	timeout := &StepError{Code: "TIMEOUT", Message: "slow", Retryable: true}
	require.Equal(t, map[string]*StepDetail{"a": {
		StepID: "a", Input: json.RawMessage(`{"n":2}`), InputSource: InputResolved, Output: json.RawMessage(`{"ok":true}`),
		Attempts: []StepAttempt{
			{LogicalAttemptID: "1", EngineAttemptID: "2", Status: StepStatusFailed, ScheduledAt: at(2), StartedAt: at(3),
				Deliveries: 2, CompletedAt: at(5), WorkerID: "w2", Error: timeout, RetryAt: timePtr(goldenT0.Add(time.Minute))},
			{LogicalAttemptID: "2", EngineAttemptID: "1", Status: StepStatusSuccess, ScheduledAt: at(7), StartedAt: at(8),
				Deliveries: 1, CompletedAt: at(9), WorkerID: "w3"},
		},
	}}, got)
}

// TestStepDetailsInputsSkipsAndFanOut: the plan's static input when the
// StepScheduled recorded none; a skip's reason and condition with no
// input; a forEach step's list and fan-out; RunCancelled ends what was
// open.
func TestStepDetailsInputsSkipsAndFanOut(t *testing.T) {
	t.Parallel()
	got, err := StepDetails(detailEvents(
		Event{EventType: RunApproved, EventData: json.RawMessage(`{"plan":{"steps":[{"id":"static","input":{"s":1}},{"id":"skip","input":{"x":1}}]}}`)},
		stepEv(StepScheduled, "static", "1", "", `{"activity":"x"}`),
		stepEv(StepSkipped, "skip", "1", "", `{"reason":"CONDITION_FALSE","condition":"skip"}`),
		stepEv(StepScheduled, "each", "1", "", `{"input":[1,2],"forEach":{"count":2,"maxParallel":1,"failFast":true}}`),
		stepEv(StepScheduled, "each[0]", "1", "", `{"input":{"item":1}}`),
		Event{EventType: RunCancelled, EventData: json.RawMessage(`{"reason":"operator"}`)},
	))
	require.NoError(t, err)
	require.JSONEq(t, `{"s":1}`, string(got["static"].Input))
	require.Equal(t, InputPlan, got["static"].InputSource)

	require.Equal(t, &StepSkip{Reason: "CONDITION_FALSE", Condition: "skip"}, got["skip"].Skip)
	require.Nil(t, got["skip"].Input, "a skipped step ran no input")
	require.Equal(t, StepStatusSkipped, got["skip"].Attempts[0].Status)

	require.Equal(t, &ForEachData{Count: 2, MaxParallel: 1, FailFast: true}, got["each"].ForEach)
	require.JSONEq(t, `[1,2]`, string(got["each"].Input))
	require.JSONEq(t, `{"item":1}`, string(got["each[0]"].Input))
	require.Equal(t, StepStatusCancelled, got["each[0]"].Attempts[0].Status)
	require.Equal(t, &StepError{Code: CodeCancelled, Message: "operator"}, got["each[0]"].Attempts[0].Error)
}

// TestStepDetailsMalformed: a payload that does not decode is reported
// with its runSeq.
func TestStepDetailsMalformed(t *testing.T) {
	t.Parallel()
	_, err := StepDetails(detailEvents(stepEv(StepStarted, "a", "1", "1", `"not an object"`)))
	var m *MalformedEventError
	require.ErrorAs(t, err, &m)
	require.Equal(t, int64(1), m.RunSeq)
}

// TestForEachProgress: the parent counts its children by status, a
// failed child is not one of the run's failed steps, and a new attempt of
// the parent keeps its fan-out.
func TestForEachProgress(t *testing.T) {
	t.Parallel()
	s, err := Project(goldenRun, detailEvents(
		stepEv(StepScheduled, "each", "1", "", `{"forEach":{"count":4,"maxParallel":4}}`),
		stepEv(StepStarted, "each[0]", "1", "1", ``),
		stepEv(StepStarted, "each[1]", "1", "1", ``),
		stepEv(StepCompleted, "each[1]", "1", "1", `{}`),
		stepEv(StepStarted, "each[2]", "1", "1", ``),
		stepEv(StepFailed, "each[2]", "1", "1", `{"error":{"code":"E"}}`),
		stepEv(StepFailed, "each", "1", "", `{"error":{"code":"E"}}`),
		stepEv(StepRetryScheduled, "each", "1", "", `{"nextLogicalAttemptId":"2"}`),
	))
	require.NoError(t, err)
	require.Equal(t, &ForEachProgress{ForEachData: ForEachData{Count: 4, MaxParallel: 4}, Done: 1, Running: 1, Failed: 1},
		s.Steps[0].ForEach)
	require.Equal(t, "2", s.Steps[0].LogicalAttemptID)
	require.Zero(t, s.FailedSteps, "the failed child is counted by its parent, which is retrying")
	require.Len(t, s.TopSteps(), 1, "the children are not top steps")
}

// TestTopSteps: a step whose id looks like a child's is a top step unless
// its parent is a forEach step.
func TestTopSteps(t *testing.T) {
	t.Parallel()
	s, err := Project(goldenRun, detailEvents(
		stepEv(StepScheduled, "plain", "1", "", `{}`),
		stepEv(StepScheduled, "plain[0]", "1", "", `{}`),
	))
	require.NoError(t, err)
	require.Len(t, s.TopSteps(), 2)
}

// TestChildren: a forEach step's children in element order, after an
// index; another step's children are not among them.
func TestChildren(t *testing.T) {
	t.Parallel()
	s, err := Project(goldenRun, detailEvents(
		stepEv(StepScheduled, "each", "1", "", `{"forEach":{"count":11}}`),
		stepEv(StepScheduled, "each[10]", "1", "", `{}`),
		stepEv(StepScheduled, "each[2]", "1", "", `{}`),
		stepEv(StepScheduled, "other[0]", "1", "", `{}`),
		stepEv(StepScheduled, "each[0]", "1", "", `{}`),
	))
	require.NoError(t, err)
	ids := func(steps []StepSnapshot) (out []string) {
		for _, st := range steps {
			out = append(out, st.StepID)
		}
		return out
	}
	require.Equal(t, []string{"each[0]", "each[2]", "each[10]"}, ids(s.Children("each", -1)))
	require.Equal(t, []string{"each[10]"}, ids(s.Children("each", 2)))
	require.Empty(t, s.Children("nothing", -1))
}
