package events

import (
	"testing"
)

var retry2 = StepRetryScheduledData{Error: errX, RetryAt: persisted(60), NextLogicalAttemptID: "2"}

// TestReduceStepEvents has one row per step-level transition.
func TestReduceStepEvents(t *testing.T) {
	t.Parallel()
	hRetried := append(clip(hStepRunning), ev(5, StepRetryScheduled, on("s1", "1"), payload(retry2)))
	runReduceCases(t, []reduceCase{
		{
			name:    "StepScheduled: step created PENDING with its logical attempt",
			history: hRunning,
			events:  []Event{ev(3, StepScheduled, on("s1", "1"), payload(StepScheduledData{Activity: "a", Queue: "q"}))},
			wantSeq: 3,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Steps = []StepSnapshot{{StepID: "s1", Status: StepStatusPending, LogicalAttemptID: "1", Artifacts: []ArtifactRef{}}}
			},
		},
		{
			name:    "StepStarted without StepScheduled: step created RUNNING",
			history: hRunning,
			events:  []Event{ev(3, StepStarted, on("s1", "1"), engine("1"), payload(StepStartedData{WorkerID: "w"}))},
			wantSeq: 3,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Steps = []StepSnapshot{{
					StepID: "s1", Status: StepStatusRunning, LogicalAttemptID: "1", EngineAttemptID: "1",
					StartedAt: tp(persisted(3)), Artifacts: []ArtifactRef{}, Attempts: 1,
				}}
			},
		},
		{
			name:    "StepStarted after StepScheduled: PENDING to RUNNING",
			history: append(clip(hRunning), ev(3, StepScheduled, on("s1", "1"))),
			events:  []Event{ev(4, StepStarted, on("s1", "1"), engine("1"), unpersisted)},
			wantSeq: 4,
			want: func(t *testing.T, s *RunSnapshot) {
				st := stepOf(t, s, "s1")
				st.Status, st.EngineAttemptID, st.StartedAt, st.Attempts = StepStatusRunning, "1", tp(emitted(4)), 1
			},
		},
		{
			name:    "StepStarted redelivered by the engine: attempts+1, engineAttemptId raised, startedAt kept",
			history: hStepRunning,
			events:  []Event{ev(5, StepStarted, on("s1", "1"), engine("2"))},
			wantSeq: 5,
			want: func(t *testing.T, s *RunSnapshot) {
				st := stepOf(t, s, "s1")
				st.EngineAttemptID, st.Attempts = "2", 2
			},
		},
		{
			name:    "StepCompleted: SUCCESS, completedAt, artifacts on step and run",
			history: hStepRunning,
			events:  []Event{ev(5, StepCompleted, on("s1", "1"), engine("2"), payload(StepCompletedData{Artifacts: []ArtifactRef{artA, artB}}))},
			wantSeq: 5,
			want: func(t *testing.T, s *RunSnapshot) {
				st := stepOf(t, s, "s1")
				st.Status, st.CompletedAt, st.EngineAttemptID = StepStatusSuccess, tp(persisted(5)), "2"
				st.Artifacts = []ArtifactRef{artA, artB}
				s.Artifacts = []ArtifactRef{artA, artB}
			},
		},
		{
			name:    "StepFailed: FAILED, error recorded, failedSteps+1",
			history: hStepRunning,
			events:  []Event{ev(5, StepFailed, on("s1", "1"), payload(StepFailedData{Error: errX}))},
			wantSeq: 5,
			want: func(t *testing.T, s *RunSnapshot) {
				st := stepOf(t, s, "s1")
				st.Status, st.CompletedAt, st.Error = StepStatusFailed, tp(persisted(5)), &errX
				s.FailedSteps = 1
			},
		},
		{
			name:    "StepFailed on a second step: failedSteps counts both",
			history: hStepFailed,
			events:  []Event{ev(6, StepFailed, on("s2", "1"), payload(StepFailedData{Error: errX}))},
			wantSeq: 6,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Steps = append(s.Steps, StepSnapshot{
					StepID: "s2", Status: StepStatusFailed, LogicalAttemptID: "1",
					CompletedAt: tp(persisted(6)), Artifacts: []ArtifactRef{}, Error: &errX,
				})
				s.FailedSteps = 2
			},
		},
		{
			name:    "StepSkipped: SKIPPED with the reason as a SKIPPED error",
			history: hRunning,
			events:  []Event{ev(3, StepSkipped, on("s2", ""), payload(StepSkippedData{Reason: "upstream failed"}))},
			wantSeq: 3,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Steps = []StepSnapshot{{
					StepID: "s2", Status: StepStatusSkipped, CompletedAt: tp(persisted(3)), Artifacts: []ArtifactRef{},
					Error: &StepError{Code: CodeSkipped, Message: "upstream failed"},
				}}
			},
		},
		{
			name:    "StepRetryScheduled: back to PENDING at the next logical attempt, error kept",
			history: hStepRunning,
			events:  []Event{ev(5, StepRetryScheduled, on("s1", "1"), payload(retry2))},
			wantSeq: 5,
			want: func(t *testing.T, s *RunSnapshot) {
				st := stepOf(t, s, "s1")
				*st = StepSnapshot{
					StepID: "s1", Status: StepStatusPending, LogicalAttemptID: "2",
					Artifacts: []ArtifactRef{}, Error: &errX, Attempts: 1,
				}
			},
		},
		{
			name:    "StepScheduled of the retried attempt: still PENDING, error still kept",
			history: hRetried,
			events:  []Event{ev(6, StepScheduled, on("s1", "2"))},
			wantSeq: 6,
		},
		{
			name:    "StepStarted of the retried attempt: RUNNING, kept error dropped",
			history: hRetried,
			events:  []Event{ev(6, StepStarted, on("s1", "2"), engine("1"))},
			wantSeq: 6,
			want: func(t *testing.T, s *RunSnapshot) {
				st := stepOf(t, s, "s1")
				st.Status, st.Error, st.EngineAttemptID, st.StartedAt, st.Attempts = StepStatusRunning, nil, "1", tp(persisted(6)), 2
			},
		},
		{
			name:    "new logical attempt by StepScheduled: clears error, completedAt, failedSteps",
			history: hStepFailed,
			events:  []Event{ev(6, StepScheduled, on("s1", "2"))},
			wantSeq: 6,
			want: func(t *testing.T, s *RunSnapshot) {
				st := stepOf(t, s, "s1")
				*st = StepSnapshot{StepID: "s1", Status: StepStatusPending, LogicalAttemptID: "2", Artifacts: []ArtifactRef{}, Attempts: 1}
				s.FailedSteps = 0
			},
		},
		{
			name:    "new logical attempt by StepStarted: clears completedAt and artifacts",
			history: hStepDone,
			events:  []Event{ev(6, StepStarted, on("s1", "2"), engine("1"))},
			wantSeq: 6,
			want: func(t *testing.T, s *RunSnapshot) {
				st := stepOf(t, s, "s1")
				*st = StepSnapshot{
					StepID: "s1", Status: StepStatusRunning, LogicalAttemptID: "2", EngineAttemptID: "1",
					StartedAt: tp(persisted(6)), Artifacts: []ArtifactRef{}, Attempts: 2,
				}
				s.Artifacts = []ArtifactRef{}
			},
		},
		{
			name:    "new logical attempt by its outcome alone (StepStarted still in the outbox)",
			history: hStepFailed,
			events:  []Event{ev(6, StepCompleted, on("s1", "2"), payload(StepCompletedData{Artifacts: []ArtifactRef{artB}}))},
			wantSeq: 6,
			want: func(t *testing.T, s *RunSnapshot) {
				st := stepOf(t, s, "s1")
				*st = StepSnapshot{
					StepID: "s1", Status: StepStatusSuccess, LogicalAttemptID: "2",
					CompletedAt: tp(persisted(6)), Artifacts: []ArtifactRef{artB}, Attempts: 1,
				}
				s.Artifacts, s.FailedSteps = []ArtifactRef{artB}, 0
			},
		},
		{
			name:    "logical attempts compare as numbers: 10 is newer than 9",
			history: append(clip(hRunning), ev(3, StepStarted, on("s1", "9"))),
			events:  []Event{ev(4, StepScheduled, on("s1", "10")), ev(5, StepCompleted, on("s1", "9"))},
			wantSeq: 5,
			want: func(t *testing.T, s *RunSnapshot) {
				*stepOf(t, s, "s1") = StepSnapshot{StepID: "s1", Status: StepStatusPending, LogicalAttemptID: "10", Artifacts: []ArtifactRef{}, Attempts: 1}
			},
		},
		{
			name:    "events of an older logical attempt are ignored",
			history: append(clip(hStepFailed), ev(6, StepScheduled, on("s1", "2"))),
			events: []Event{
				ev(7, StepCompleted, on("s1", "1"), payload(StepCompletedData{Artifacts: []ArtifactRef{artA}})),
				ev(8, StepStarted, on("s1", "1"), engine("5")),
				ev(9, StepRetryScheduled, on("s1", "1"), payload(retry2)),
			},
			wantSeq: 9,
		},
		{
			name:    "late StepStarted does not reopen a finished attempt",
			history: hStepDone,
			events:  []Event{ev(6, StepStarted, on("s1", "1"), engine("1"))},
			wantSeq: 6,
			want:    func(t *testing.T, s *RunSnapshot) { stepOf(t, s, "s1").Attempts = 2 },
		},
		{
			name:    "first outcome of an attempt wins",
			history: hStepDone,
			events: []Event{
				ev(6, StepFailed, on("s1", "1"), engine("2"), payload(StepFailedData{Error: errX})),
				ev(7, StepSkipped, on("s1", "1"), payload(StepSkippedData{Reason: "r"})),
				ev(8, StepCompleted, on("s1", "1"), payload(StepCompletedData{Artifacts: []ArtifactRef{artB}})),
				ev(9, StepRetryScheduled, on("s1", "1"), payload(StepRetryScheduledData{Error: errX})),
			},
			wantSeq: 9,
		},
		{
			name:    "a late event never lowers engineAttemptId",
			history: append(clip(hStepRunning), ev(5, StepStarted, on("s1", "1"), engine("3"))),
			events:  []Event{ev(6, StepCompleted, on("s1", "1"), engine("2"))},
			wantSeq: 6,
			want: func(t *testing.T, s *RunSnapshot) {
				st := stepOf(t, s, "s1")
				st.Status, st.CompletedAt = StepStatusSuccess, tp(persisted(6))
			},
		},
		{
			name:    "an empty logicalAttemptId applies to the current attempt",
			history: hStepRunning,
			events:  []Event{ev(5, StepSkipped, on("s1", ""), payload(StepSkippedData{Reason: "cancelled"}))},
			wantSeq: 5,
			want: func(t *testing.T, s *RunSnapshot) {
				st := stepOf(t, s, "s1")
				st.Status, st.CompletedAt = StepStatusSkipped, tp(persisted(5))
				st.Error = &StepError{Code: CodeSkipped, Message: "cancelled"}
			},
		},
		{
			name:    "steps keep the order of their first appearance",
			history: hRunning,
			events: []Event{
				ev(3, StepStarted, on("b", "1")), ev(4, StepScheduled, on("a", "1")),
				ev(5, StepCompleted, on("b", "1"), payload(StepCompletedData{Artifacts: []ArtifactRef{artB}})),
				ev(6, StepCompleted, on("c", "1"), payload(StepCompletedData{Artifacts: []ArtifactRef{artA}})),
				ev(7, StepStarted, on("a", "1")),
			},
			wantSeq: 7,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Steps = []StepSnapshot{
					{StepID: "b", Status: StepStatusSuccess, LogicalAttemptID: "1", StartedAt: tp(persisted(3)), CompletedAt: tp(persisted(5)), Artifacts: []ArtifactRef{artB}, Attempts: 1},
					{StepID: "a", Status: StepStatusRunning, LogicalAttemptID: "1", StartedAt: tp(persisted(7)), Artifacts: []ArtifactRef{}, Attempts: 1},
					{StepID: "c", Status: StepStatusSuccess, LogicalAttemptID: "1", CompletedAt: tp(persisted(6)), Artifacts: []ArtifactRef{artA}},
				}
				s.Artifacts = []ArtifactRef{artB, artA}
			},
		},
	})
}
