package events

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const testRun = "0190a8e2-7b3c-7def-8123-456789abcdef"

// t0 is the time of runSeq 0; event seq is persisted seq seconds later and
// emitted half a second before that, so tests can tell the two apart.
var t0 = time.Date(2026, 2, 11, 10, 0, 0, 0, time.UTC)

func persisted(seq int64) time.Time { return t0.Add(time.Duration(seq) * time.Second) }
func emitted(seq int64) time.Time   { return persisted(seq).Add(-500 * time.Millisecond) }

// ev builds an event of testRun at runSeq seq.
func ev(seq int64, typ Type, opts ...func(*Event)) Event {
	e := Event{
		SchemaVersion: SchemaVersion,
		RunID:         testRun,
		RunSeq:        seq,
		EventID:       fmt.Sprintf("evt-%d", seq),
		EventType:     typ,
		EmittedAt:     emitted(seq),
		PersistedAt:   persisted(seq),
	}
	for _, o := range opts {
		o(&e)
	}
	return e
}

// on sets the step and logical attempt.
func on(stepID, logical string) func(*Event) {
	return func(e *Event) { e.StepID, e.LogicalAttemptID = stepID, logical }
}

// engine sets the engine attempt.
func engine(id string) func(*Event) { return func(e *Event) { e.EngineAttemptID = id } }

// payload sets eventData to the JSON of v.
func payload(v any) func(*Event) {
	return func(e *Event) {
		raw, err := MarshalData(v)
		if err != nil {
			panic(err) // test payloads are always encodable
		}
		e.EventData = raw
	}
}

// rawPayload sets eventData verbatim.
func rawPayload(s string) func(*Event) { return func(e *Event) { e.EventData = json.RawMessage(s) } }

// runRef sets the envelope's engineRunRef.
func runRef(s string) func(*Event) { return func(e *Event) { e.EngineRunRef = json.RawMessage(s) } }

// unpersisted clears persistedAt, leaving emittedAt.
func unpersisted(e *Event) { e.PersistedAt = time.Time{} }

// withRun sets the runId.
func withRun(id string) func(*Event) { return func(e *Event) { e.RunID = id } }

func tp(t time.Time) *time.Time { return &t }
func i64p(v int64) *int64       { return &v }

// stepOf returns the step stepID of s, failing the test if there is none.
func stepOf(t *testing.T, s *RunSnapshot, stepID string) *StepSnapshot {
	t.Helper()
	for i := range s.Steps {
		if s.Steps[i].StepID == stepID {
			return &s.Steps[i]
		}
	}
	require.FailNow(t, "no step "+stepID)
	return nil
}

var (
	artA = ArtifactRef{URI: "s3://b/a", Kind: "dbt-manifest", SHA256: "aa", SizeBytes: 10}
	artB = ArtifactRef{URI: "s3://b/b", Kind: "log-bundle"}
	errX = StepError{Code: "X", Message: "boom", Retryable: true, Category: "INFRA"}
)

// Common histories the table rows start from.
var (
	hApproved = []Event{ev(1, RunApproved)}
	hRunning  = append(clip(hApproved), ev(2, RunStarted, runRef(`{"workflowId":"w1"}`)))
	// s1 logical attempt 1 RUNNING on engine attempt 1.
	hStepRunning = append(clip(hRunning),
		ev(3, StepScheduled, on("s1", "1"), payload(StepScheduledData{Activity: "a", Queue: "q"})),
		ev(4, StepStarted, on("s1", "1"), engine("1")))
	hStepDone = append(clip(hStepRunning),
		ev(5, StepCompleted, on("s1", "1"), engine("1"), payload(StepCompletedData{Artifacts: []ArtifactRef{artA}})))
	hStepFailed = append(clip(hStepRunning),
		ev(5, StepFailed, on("s1", "1"), engine("1"), payload(StepFailedData{Error: errX})))
	hCompleted = append(clip(hStepDone), ev(6, RunCompleted))
)

// clip returns a copy of h, so that appends to it never share memory.
func clip(h []Event) []Event { return append([]Event(nil), h...) }

// reduceCase is one row of a reducer table: the snapshot of history, then
// events applied incrementally; want edits a copy of the before snapshot
// into the expected result.
type reduceCase struct {
	name    string
	history []Event
	events  []Event
	wantSeq int64
	want    func(t *testing.T, s *RunSnapshot)
	wantErr func(t *testing.T, err error)
}

func runReduceCases(t *testing.T, cases []reduceCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before, err := Project(testRun, tc.history)
			require.NoError(t, err)
			saved := before.clone()

			got, err := ProjectIncremental(before, tc.events)
			if tc.wantErr == nil {
				require.NoError(t, err)
			} else {
				tc.wantErr(t, err)
			}

			want := before.clone()
			want.LastEventSeq = tc.wantSeq
			if tc.want != nil {
				tc.want(t, &want)
			}
			require.Equal(t, want, got)
			require.Equal(t, saved, before, "input snapshot modified")
		})
	}
}
