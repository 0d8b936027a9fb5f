package events

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReduceRunEvents has one row per run-level transition.
func TestReduceRunEvents(t *testing.T) {
	t.Parallel()
	runReduceCases(t, []reduceCase{
		{
			name:    "RunApproved: PENDING to APPROVED",
			events:  []Event{ev(1, RunApproved, payload(RunApprovedData{TenantID: "t", PlanVersion: "3"}))},
			wantSeq: 1,
			want:    func(_ *testing.T, s *RunSnapshot) { s.Status = RunStatusApproved },
		},
		{
			name:    "RunStarted: RUNNING, engineRunRef and startedAt from persistedAt",
			history: hApproved,
			events:  []Event{ev(2, RunStarted, runRef(`{"workflowId":"w1"}`))},
			wantSeq: 2,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Status = RunStatusRunning
				s.EngineRunRef = json.RawMessage(`{"workflowId":"w1"}`)
				s.StartedAt = tp(persisted(2))
			},
		},
		{
			name:    "RunStarted: startedAt falls back to emittedAt, engineRunRef to the payload",
			history: hApproved,
			events: []Event{ev(2, RunStarted, unpersisted,
				payload(RunStartedData{EngineRunRef: json.RawMessage(`{"workflowId":"w2"}`)}))},
			wantSeq: 2,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Status = RunStatusRunning
				s.EngineRunRef = json.RawMessage(`{"workflowId":"w2"}`)
				s.StartedAt = tp(emitted(2))
			},
		},
		{
			name:    "RunStarted again: keeps the first startedAt, takes the new engineRunRef",
			history: hRunning,
			events:  []Event{ev(3, RunPaused), ev(4, RunStarted, runRef(`{"workflowId":"w3"}`))},
			wantSeq: 4,
			want:    func(_ *testing.T, s *RunSnapshot) { s.EngineRunRef = json.RawMessage(`{"workflowId":"w3"}`) },
		},
		{
			name:    "RunPaused: RUNNING to PAUSED",
			history: hRunning,
			events:  []Event{ev(3, RunPaused, payload(RunPausedData{Reason: "operator"}))},
			wantSeq: 3,
			want:    func(_ *testing.T, s *RunSnapshot) { s.Status = RunStatusPaused },
		},
		{
			name:    "RunResumed: PAUSED to RUNNING",
			history: append(clip(hRunning), ev(3, RunPaused)),
			events:  []Event{ev(4, RunResumed)},
			wantSeq: 4,
			want:    func(_ *testing.T, s *RunSnapshot) { s.Status = RunStatusRunning },
		},
		{
			name:    "RunCompleted: COMPLETED, completedAt, duration, artifacts aggregated",
			history: append(clip(hStepDone), ev(6, StepCompleted, on("s2", "1"), payload(StepCompletedData{Artifacts: []ArtifactRef{artB}}))),
			events:  []Event{ev(7, RunCompleted)},
			wantSeq: 7,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Status = RunStatusCompleted
				s.CompletedAt = tp(persisted(7))
				s.TotalDurationMs = i64p(5000) // started at seq 2
				s.Artifacts = []ArtifactRef{artA, artB}
			},
		},
		{
			name:    "RunFailed: root cause from the payload's error",
			history: hStepFailed,
			events:  []Event{ev(6, RunFailed, payload(RunFailedData{Reason: "r", Error: &StepError{Code: "ROOT", Message: "m"}}))},
			wantSeq: 6,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Status = RunStatusFailed
				s.Error = &StepError{Code: "ROOT", Message: "m"}
				s.CompletedAt = tp(persisted(6))
				s.TotalDurationMs = i64p(4000)
			},
		},
		{
			name:    "RunFailed: root cause from the step it names",
			history: hStepFailed,
			events:  []Event{ev(6, RunFailed, payload(RunFailedData{Reason: "step s1 failed", StepID: "s1"}))},
			wantSeq: 6,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Status = RunStatusFailed
				s.Error = &errX
				s.CompletedAt = tp(persisted(6))
				s.TotalDurationMs = i64p(4000)
			},
		},
		{
			name:    "RunFailed: root cause from the reason alone",
			history: hRunning,
			events:  []Event{ev(3, RunFailed, payload(RunFailedData{Reason: "plan invalid", StepID: "unknown"}))},
			wantSeq: 3,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Status = RunStatusFailed
				s.Error = &StepError{Code: CodeRunFailed, Message: "plan invalid"}
				s.CompletedAt = tp(persisted(3))
				s.TotalDurationMs = i64p(1000)
			},
		},
		{
			name:    "RunCancelled: CANCELLED, completedAt, duration; the RUNNING attempt ends CANCELLED",
			history: hStepRunning,
			events:  []Event{ev(5, RunCancelled, payload(RunCancelledData{Reason: "operator"}))},
			wantSeq: 5,
			want: func(t *testing.T, s *RunSnapshot) {
				s.Status = RunStatusCancelled
				s.CompletedAt = tp(persisted(5))
				s.TotalDurationMs = i64p(3000)
				st := stepOf(t, s, "s1")
				st.Status, st.CompletedAt = StepStatusCancelled, tp(persisted(5))
				st.Error = &StepError{Code: CodeCancelled, Message: "operator"}
			},
		},
		{
			name: "RunCancelled: PENDING and RUNNING attempts end CANCELLED, finished ones keep their outcome",
			history: append(clip(hStepDone),
				ev(6, StepScheduled, on("s2", "1")),
				ev(7, StepScheduled, on("s3", "1")), ev(8, StepStarted, on("s3", "1"), engine("1")),
				ev(9, StepScheduled, on("s4", "1")), ev(10, StepStarted, on("s4", "1"), engine("1")),
				ev(11, StepRetryScheduled, on("s4", "1"), payload(StepRetryScheduledData{Error: errX, NextLogicalAttemptID: "2"}))),
			events: []Event{
				ev(12, RunCancelled, payload(RunCancelledData{Reason: "by signal"})),
				// A late outcome of a cancelled attempt does not reopen it.
				ev(13, StepCompleted, on("s3", "1"), engine("1")),
			},
			wantSeq: 13,
			want: func(t *testing.T, s *RunSnapshot) {
				s.Status = RunStatusCancelled
				s.CompletedAt = tp(persisted(12))
				s.TotalDurationMs = i64p(10000)
				for _, id := range []string{"s2", "s3", "s4"} {
					st := stepOf(t, s, id)
					st.Status, st.CompletedAt = StepStatusCancelled, tp(persisted(12))
					st.Error = &StepError{Code: CodeCancelled, Message: "by signal"}
				}
			},
		},
		{
			name:    "RunCancelled before RunStarted: no duration",
			history: hApproved,
			events:  []Event{ev(2, RunCancelled)},
			wantSeq: 2,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Status = RunStatusCancelled
				s.CompletedAt = tp(persisted(2))
			},
		},
		{
			name:    "terminal is absorbing: late RunResumed, RunStarted, RunFailed after RunCompleted",
			history: hCompleted,
			events: []Event{
				ev(7, RunResumed), ev(8, RunStarted, runRef(`{"x":1}`)), ev(9, RunPaused),
				ev(10, RunFailed, payload(RunFailedData{Reason: "late"})), ev(11, RunCancelled), ev(12, RunApproved),
			},
			wantSeq: 12,
		},
		{
			name:    "RunResumed reopens a failed run (RETRY_STEP)",
			history: append(clip(hStepFailed), ev(6, RunFailed, payload(RunFailedData{Reason: "r", StepID: "s1"}))),
			events:  []Event{ev(7, RunResumed)},
			wantSeq: 7,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Status = RunStatusRunning
				s.CompletedAt, s.TotalDurationMs, s.Error = nil, nil, nil // the failure no longer holds
			},
		},
		{
			name:    "RunResumed does not reopen a cancelled run",
			history: append(clip(hApproved), ev(2, RunCancelled)),
			events:  []Event{ev(3, RunResumed)},
			wantSeq: 3,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Status = RunStatusCancelled
				s.CompletedAt = tp(persisted(2))
			},
		},
		{
			name:    "step events still apply after the run is terminal",
			history: append(clip(hStepRunning), ev(5, RunFailed, payload(RunFailedData{Reason: "r"}))),
			events:  []Event{ev(6, StepFailed, on("s1", "1"), payload(StepFailedData{Error: errX}))},
			wantSeq: 6,
			want: func(t *testing.T, s *RunSnapshot) {
				st := stepOf(t, s, "s1")
				st.Status, st.CompletedAt, st.Error = StepStatusFailed, tp(persisted(6)), &errX
				s.FailedSteps = 1
			},
		},
		{
			name:    "duration is clamped at zero when clocks disagree",
			history: hApproved,
			events:  []Event{ev(2, RunStarted), ev(3, RunCompleted, unpersisted, func(e *Event) { e.EmittedAt = t0 })},
			wantSeq: 3,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Status = RunStatusCompleted
				s.StartedAt, s.CompletedAt, s.TotalDurationMs = tp(persisted(2)), tp(t0), i64p(0)
			},
		},
	})
}

// TestReduceQueuedRuns: RunQueued holds an APPROVED run as QUEUED, with
// its reason, until it starts or is cancelled; in any other status it
// changes nothing.
func TestReduceQueuedRuns(t *testing.T) {
	t.Parallel()
	held := RunQueuedData{EnvironmentID: "cust-1", Running: 2, Limit: 2, Reason: RunQueuedReason("cust-1", 2, 2, 0)}
	hQueued := append(clip(hApproved), ev(2, RunQueued, payload(held)))
	queued := func(_ *testing.T, s *RunSnapshot) {
		s.Status = RunStatusQueued
		s.Queued = &QueueHold{Reason: "2 of 2 running in environment cust-1", Since: persisted(2)}
	}
	runReduceCases(t, []reduceCase{
		{name: "RunQueued: APPROVED to QUEUED, with the reason and since when", history: hApproved,
			events: []Event{ev(2, RunQueued, payload(held))}, wantSeq: 2, want: queued},
		{name: "RunQueued without a payload: QUEUED, no reason", history: hApproved,
			events: []Event{ev(2, RunQueued)}, wantSeq: 2,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Status = RunStatusQueued
				s.Queued = &QueueHold{Since: persisted(2)}
			}},
		{name: "RunStarted: QUEUED to RUNNING, the hold cleared", history: hQueued,
			events: []Event{ev(3, RunStarted)}, wantSeq: 3,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Status, s.Queued = RunStatusRunning, nil
				s.StartedAt = tp(persisted(3))
			}},
		{name: "RunCancelled: QUEUED to CANCELLED, the hold cleared", history: hQueued,
			events: []Event{ev(3, RunCancelled, payload(RunCancelledData{Reason: "operator"}))}, wantSeq: 3,
			want: func(_ *testing.T, s *RunSnapshot) {
				s.Status, s.Queued = RunStatusCancelled, nil
				s.CompletedAt = tp(persisted(3))
			}},
		{name: "RunQueued on a running run changes nothing", history: hRunning,
			events: []Event{ev(3, RunQueued, payload(held))}, wantSeq: 3},
		{name: "RunQueued on a completed run changes nothing", history: hCompleted,
			events: []Event{ev(7, RunQueued, payload(held))}, wantSeq: 7},
		{name: "RunQueued with a payload that is not JSON is malformed", history: hApproved,
			events: []Event{ev(2, RunQueued, rawPayload(`not json`))}, wantSeq: 1, wantErr: wantMalformed(2, RunQueued)},
	})
}

func TestRunQueuedReason(t *testing.T) {
	t.Parallel()
	require.Equal(t, "2 of 2 running in environment cust-1", RunQueuedReason("cust-1", 2, 2, 0))
	require.Equal(t, "1 of 2 running in environment e, 3 queued ahead", RunQueuedReason("e", 1, 2, 3))
}

// TestReduceNonStatusEvents: signals and unknown types change nothing but
// lastEventSeq, in every run status.
func TestReduceNonStatusEvents(t *testing.T) {
	t.Parallel()
	var cases []reduceCase
	for _, typ := range []Type{SignalAccepted, SignalRejected, SignalApplied, "SomethingFromV2"} {
		for _, h := range [][]Event{nil, hApproved, hStepRunning, hCompleted} {
			next := int64(len(h)) + 1
			cases = append(cases, reduceCase{
				name:    string(typ) + " after " + statusAfter(t, h),
				history: h,
				// Payloads the reducer does not read are not decoded either.
				events:  []Event{ev(next, typ, on("s9", "1"), rawPayload(`{"signalName":"PAUSE","payload":{}}`)), ev(next+1, typ, rawPayload(`not json`))},
				wantSeq: next + 1,
			})
		}
	}
	runReduceCases(t, cases)
}

func statusAfter(t *testing.T, h []Event) string {
	t.Helper()
	s, err := Project(testRun, h)
	require.NoError(t, err)
	return string(s.Status)
}
