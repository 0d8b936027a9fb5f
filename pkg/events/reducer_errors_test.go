package events

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func wantGap(last, next int64) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var gap *GapError
		require.ErrorAs(t, err, &gap)
		require.Equal(t, GapError{RunID: testRun, LastEventSeq: last, NextSeq: next}, *gap)
	}
}

func wantMalformed(seq int64, typ Type) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var me *MalformedEventError
		require.ErrorAs(t, err, &me)
		require.Equal(t, testRun, me.RunID)
		require.Equal(t, seq, me.RunSeq)
		require.Equal(t, typ, me.Type)
		require.Error(t, me.Err)
	}
}

func wantWrongRun(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, ErrWrongRun)
}

// TestReduceOrderingAndErrors covers duplicates, gaps, foreign and
// malformed events: on an error the result holds exactly the events before
// the offending one.
func TestReduceOrderingAndErrors(t *testing.T) {
	t.Parallel()
	paused := func(_ *testing.T, s *RunSnapshot) { s.Status = RunStatusPaused }
	runReduceCases(t, []reduceCase{
		{
			name:    "duplicates (runSeq <= lastEventSeq) are skipped",
			history: hStepRunning,
			events: []Event{
				ev(3, StepFailed, on("s1", "1"), payload(StepFailedData{Error: errX})),
				ev(4, RunCompleted), ev(5, RunPaused), ev(5, RunResumed), ev(2, RunCancelled),
			},
			wantSeq: 5,
			want:    paused,
		},
		{
			name:    "a batch of only duplicates changes nothing",
			history: hStepDone,
			events:  hStepDone,
			wantSeq: 5,
		},
		{
			name:    "gap: stop before it, never apply past it",
			history: hRunning,
			events:  []Event{ev(3, RunPaused), ev(5, RunResumed), ev(6, RunCancelled)},
			wantSeq: 3,
			want:    paused,
			wantErr: wantGap(3, 5),
		},
		{
			name:    "gap on the first event of the batch",
			history: hRunning,
			events:  []Event{ev(4, RunPaused)},
			wantSeq: 2,
			wantErr: wantGap(2, 4),
		},
		{
			name:    "gap from the empty snapshot",
			events:  []Event{ev(2, RunApproved)},
			wantErr: wantGap(0, 2),
		},
		{
			name:    "event of another run",
			history: hRunning,
			events:  []Event{ev(3, RunPaused), ev(4, RunResumed, withRun("0190a8e2-0000-7000-8000-000000000000")), ev(5, RunCancelled)},
			wantSeq: 3,
			want:    paused,
			wantErr: wantWrongRun,
		},
		{
			name:    "event of another run is refused even with a duplicate runSeq",
			history: hRunning,
			events:  []Event{ev(1, RunApproved, withRun("other"))},
			wantSeq: 2,
			wantErr: wantWrongRun,
		},
		{
			name:    "malformed StepCompleted data: typed error, step not created",
			history: hRunning,
			events:  []Event{ev(3, RunPaused), ev(4, StepCompleted, on("s1", "1"), rawPayload(`{"artifacts":"nope"}`)), ev(5, RunResumed)},
			wantSeq: 3,
			want:    paused,
			wantErr: wantMalformed(4, StepCompleted),
		},
		{
			name:    "malformed StepFailed data",
			history: hStepRunning,
			events:  []Event{ev(5, StepFailed, on("s1", "1"), rawPayload(`{"error":1}`))},
			wantSeq: 4,
			wantErr: wantMalformed(5, StepFailed),
		},
		{
			name:    "malformed StepSkipped data",
			history: hStepRunning,
			events:  []Event{ev(5, StepSkipped, on("s1", "1"), rawPayload(`["reason"]`))},
			wantSeq: 4,
			wantErr: wantMalformed(5, StepSkipped),
		},
		{
			name:    "malformed StepRetryScheduled data",
			history: hStepRunning,
			events:  []Event{ev(5, StepRetryScheduled, on("s1", "1"), rawPayload(`{"retryAt":"tomorrow"}`))},
			wantSeq: 4,
			wantErr: wantMalformed(5, StepRetryScheduled),
		},
		{
			name:    "malformed RunStarted data",
			history: hApproved,
			events:  []Event{ev(2, RunStarted, rawPayload(`{"engineRunRef":`))},
			wantSeq: 1,
			wantErr: wantMalformed(2, RunStarted),
		},
		{
			name:    "malformed RunFailed data is reported even after the run is terminal",
			history: hCompleted,
			events:  []Event{ev(7, RunFailed, rawPayload(`{"error":"x"}`))},
			wantSeq: 6,
			wantErr: wantMalformed(7, RunFailed),
		},
		{
			name:    "step event without stepId",
			history: hRunning,
			events:  []Event{ev(3, StepStarted)},
			wantSeq: 2,
			wantErr: func(t *testing.T, err error) {
				wantMalformed(3, StepStarted)(t, err)
				require.ErrorIs(t, err, errMissingStepID)
			},
		},
		{
			name:    "event without an assigned runSeq",
			history: hRunning,
			events:  []Event{ev(0, RunPaused)},
			wantSeq: 2,
			wantErr: func(t *testing.T, err error) {
				wantMalformed(0, RunPaused)(t, err)
				require.ErrorIs(t, err, errSeqNotAssigned)
			},
		},
	})
}

func TestDetectGap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		last, next int64
		gap        bool
	}{
		{0, 1, false}, {0, 2, true}, {5, 6, false}, {5, 7, true},
		{5, 5, false}, {5, 1, false}, {0, 100, true},
	} {
		require.Equal(t, tc.gap, DetectGap(tc.last, tc.next), "last=%d next=%d", tc.last, tc.next)
	}
}

func TestGapErrorMessage(t *testing.T) {
	t.Parallel()
	err := error(&GapError{RunID: "r1", LastEventSeq: 3, NextSeq: 5})
	require.EqualError(t, err, "events: gap in run r1: last applied runSeq 3, next event has runSeq 5")
}

func TestProjectIncrementalFromZeroSnapshot(t *testing.T) {
	t.Parallel()
	got, err := ProjectIncremental(RunSnapshot{RunID: testRun}, nil)
	require.NoError(t, err)
	require.Equal(t, RunSnapshot{RunID: testRun, Status: RunStatusPending, Steps: []StepSnapshot{}, Artifacts: []ArtifactRef{}}, got)

	// A zero snapshot belongs to no run, so every event is foreign.
	_, err = ProjectIncremental(RunSnapshot{}, hApproved)
	require.ErrorIs(t, err, ErrWrongRun)
}
