package events

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStatusTerminal(t *testing.T) {
	t.Parallel()
	runTerminal := map[RunStatus]bool{
		RunStatusPending: false, RunStatusApproved: false, RunStatusRunning: false, RunStatusPaused: false,
		RunStatusCompleted: true, RunStatusFailed: true, RunStatusCancelled: true,
	}
	for s, want := range runTerminal {
		require.Equal(t, want, s.Terminal(), s)
	}
	stepTerminal := map[StepStatus]bool{
		StepStatusPending: false, StepStatusRunning: false,
		StepStatusSuccess: true, StepStatusFailed: true, StepStatusSkipped: true,
	}
	for s, want := range stepTerminal {
		require.Equal(t, want, s.Terminal(), s)
	}
}

// TestSnapshotJSONShape pins the JSON of execution-semantics §1.4.
func TestSnapshotJSONShape(t *testing.T) {
	t.Parallel()
	empty, err := Project(testRun, nil)
	require.NoError(t, err)
	raw, err := json.Marshal(empty)
	require.NoError(t, err)
	require.JSONEq(t, `{"runId":"`+testRun+`","status":"PENDING","lastEventSeq":0,"steps":[],"artifacts":[],"failedSteps":0}`, string(raw))

	h := append(clip(hStepFailed), ev(6, StepScheduled, on("s2", "1")), ev(7, RunFailed, payload(RunFailedData{StepID: "s1"})))
	s, err := Project(testRun, h)
	require.NoError(t, err)
	raw, err = json.Marshal(s)
	require.NoError(t, err)
	require.JSONEq(t, `{
		"runId": "`+testRun+`", "status": "FAILED", "lastEventSeq": 7,
		"steps": [
			{"stepId": "s1", "status": "FAILED", "logicalAttemptId": "1", "engineAttemptId": "1",
			 "startedAt": "2026-02-11T10:00:04Z", "completedAt": "2026-02-11T10:00:05Z", "artifacts": [],
			 "error": {"code": "X", "message": "boom", "retryable": true, "category": "INFRA"}, "attempts": 1},
			{"stepId": "s2", "status": "PENDING", "logicalAttemptId": "1", "artifacts": [], "attempts": 0}
		],
		"artifacts": [],
		"startedAt": "2026-02-11T10:00:02Z", "completedAt": "2026-02-11T10:00:07Z", "totalDurationMs": 5000,
		"failedSteps": 1, "engineRunRef": {"workflowId": "w1"},
		"error": {"code": "X", "message": "boom", "retryable": true, "category": "INFRA"}
	}`, string(raw))

	// A snapshot survives a JSON round trip, so a projector can persist it
	// and continue incrementally from the stored copy.
	var back RunSnapshot
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, s, back)
}

// withSpareCapacity returns s with every slice given spare capacity, so that
// a reducer appending to an input slice would write into memory s shares.
func withSpareCapacity(s RunSnapshot) RunSnapshot {
	steps := make([]StepSnapshot, len(s.Steps), len(s.Steps)+8)
	for i, st := range s.Steps {
		st.Artifacts = append(make([]ArtifactRef, 0, len(st.Artifacts)+8), st.Artifacts...)
		steps[i] = st
	}
	s.Steps = steps
	s.Artifacts = append(make([]ArtifactRef, 0, len(s.Artifacts)+8), s.Artifacts...)
	s.EngineRunRef = append(make(json.RawMessage, 0, len(s.EngineRunRef)+8), s.EngineRunRef...)
	return s
}

// fullView returns everything reachable from s including the spare capacity
// of its slices, via JSON, which shares no memory with s.
func fullView(t *testing.T, s RunSnapshot) string {
	t.Helper()
	type stepView struct {
		Step      StepSnapshot
		Artifacts []ArtifactRef
	}
	v := struct {
		Snap      RunSnapshot
		Steps     []stepView
		Artifacts []ArtifactRef
		Ref       []byte
	}{Snap: s, Artifacts: s.Artifacts[:cap(s.Artifacts)], Ref: s.EngineRunRef[:cap(s.EngineRunRef)]}
	for _, st := range s.Steps[:cap(s.Steps)] {
		v.Steps = append(v.Steps, stepView{Step: st, Artifacts: st.Artifacts[:cap(st.Artifacts)]})
	}
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return string(raw)
}

func TestProjectIncrementalNeverModifiesInput(t *testing.T) {
	t.Parallel()
	h := append(clip(hStepDone),
		ev(6, StepStarted, on("s2", "1"), engine("1")),
		ev(7, StepFailed, on("s2", "1"), payload(StepFailedData{Error: errX})),
		ev(8, StepCompleted, on("s0", "1"), payload(StepCompletedData{Artifacts: []ArtifactRef{artA, artB}}))) // untouched below
	base, err := Project(testRun, h)
	require.NoError(t, err)
	in := withSpareCapacity(base)
	before := fullView(t, in)
	evs := append(clip(h), // duplicates first
		ev(9, StepCompleted, on("s1", "1"), payload(StepCompletedData{Artifacts: []ArtifactRef{artB}})), // ignored: first outcome wins
		ev(10, StepRetryScheduled, on("s2", "1"), payload(retry2)),
		ev(11, StepStarted, on("s2", "2"), engine("1")),
		ev(12, StepCompleted, on("s2", "2"), payload(StepCompletedData{Artifacts: []ArtifactRef{artB, artA}})),
		ev(13, StepCompleted, on("s3", "1"), payload(StepCompletedData{Artifacts: []ArtifactRef{artA}})),
		ev(14, RunStarted, runRef(`{"workflowId":"w2"}`)),
		ev(15, StepScheduled, on("s1", "2")),
		ev(16, RunFailed, payload(RunFailedData{Reason: "r"})))
	evsBefore, err := json.Marshal(evs)
	require.NoError(t, err)

	out, err := ProjectIncremental(in, evs)
	require.NoError(t, err)
	require.Equal(t, int64(16), out.LastEventSeq)
	require.Len(t, out.Steps, 4)
	require.Equal(t, before, fullView(t, in), "input snapshot or its spare capacity modified")
	evsAfter, err := json.Marshal(evs)
	require.NoError(t, err)
	require.JSONEq(t, string(evsBefore), string(evsAfter), "events modified")

	// The output shares no memory with the input or the events.
	scribble(&out)
	require.Equal(t, before, fullView(t, in), "output aliases input")
	evsAfter, err = json.Marshal(evs)
	require.NoError(t, err)
	require.JSONEq(t, string(evsBefore), string(evsAfter), "output aliases events")

	// Same for a snapshot the events leave alone: every part of the output
	// is then a copy of the corresponding part of the input.
	failed, err := ProjectIncremental(base, []Event{ev(9, RunFailed, payload(RunFailedData{StepID: "s2"}))})
	require.NoError(t, err)
	in = withSpareCapacity(failed)
	before = fullView(t, in)
	out, err = ProjectIncremental(in, []Event{ev(10, "UnknownType")})
	require.NoError(t, err)
	scribble(&out)
	require.Equal(t, before, fullView(t, in), "output of a no-op projection aliases input")
}

// scribble overwrites everything reachable from s.
func scribble(s *RunSnapshot) {
	for _, p := range []*time.Time{s.StartedAt, s.CompletedAt} {
		if p != nil {
			*p = t0
		}
	}
	if s.TotalDurationMs != nil {
		*s.TotalDurationMs = -1
	}
	if s.Error != nil {
		s.Error.Code = "scribbled"
	}
	for i := range s.EngineRunRef {
		s.EngineRunRef[i] = 'X'
	}
	for i := range s.Artifacts {
		s.Artifacts[i].URI = "scribbled"
	}
	for i := range s.Steps {
		st := &s.Steps[i]
		st.Status = "scribbled"
		for _, p := range []*time.Time{st.StartedAt, st.CompletedAt} {
			if p != nil {
				*p = t0
			}
		}
		if st.Error != nil {
			st.Error.Code = "scribbled"
		}
		for j := range st.Artifacts {
			st.Artifacts[j].URI = "scribbled"
		}
	}
}

func TestProjectIncrementalIsDeterministic(t *testing.T) {
	t.Parallel()
	// The same input projected twice gives equal, independent results.
	h := append(clip(hStepDone), ev(6, RunCompleted))
	a, err := Project(testRun, h)
	require.NoError(t, err)
	b, err := Project(testRun, h)
	require.NoError(t, err)
	require.Equal(t, a, b)
	a.Steps[0].Artifacts[0].URI = "changed"
	require.Equal(t, artA, b.Steps[0].Artifacts[0])
}
