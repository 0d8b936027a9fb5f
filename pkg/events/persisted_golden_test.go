package events

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

// The golden files in testdata/persisted hold every record this package
// owns as today's writer writes it: the event envelope (the row of
// run_events and the body of the bus message), each eventData payload, and
// the RunSnapshot the projector stores in run_snapshots.snapshot. Each test
// decodes the golden with today's reader and re-encodes today's writer
// output against it, so a change that would break a record already in a
// log fails here (docs/persisted-format.md). WEFT_UPDATE_GOLDEN=1
// rewrites the files; review the diff: a changed golden is a format change.

const (
	goldenRun   = "0190a8e2-7b3c-7def-8123-456789abcdef"
	goldenEvent = "0190a8e2-7b3c-7abc-8def-0123456789ab"
)

var goldenT0 = time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC)

// readPayload decodes an eventData payload the way every reader does.
func readPayload(data []byte, v any) error { return Event{EventData: data}.Data(v) }

// payloadRecord is the record of an eventData payload: written with
// MarshalData, read with Event.Data.
func payloadRecord[T any](name string, v T) goldentest.Record {
	return goldentest.JSON(name, func(t testing.TB) T {
		t.Helper()
		b, err := MarshalData(v)
		require.NoError(t, err)
		var round T
		require.NoError(t, json.Unmarshal(b, &round))
		return round
	}, v, readPayload)
}

func persistedRecords() []goldentest.Record {
	stepErr := StepError{Code: "E_TIMEOUT", Message: "took too long", Retryable: true, Category: "TIMEOUT"}
	artifact := ArtifactRef{URI: "s3://bucket/run/manifest.json", Kind: "dbt-manifest", SHA256: "ab12", SizeBytes: 42,
		ExpiresAt: goldenT0.Add(30 * 24 * time.Hour)}
	completed := StepCompletedData{Output: json.RawMessage(`{"rows":3}`), Artifacts: []ArtifactRef{artifact}}
	return []goldentest.Record{
		goldentest.JSON("envelope_step_v1", func(t testing.TB) Event {
			t.Helper()
			e, err := New(Spec{RunID: goldenRun, StepID: "extract", LogicalAttemptID: "2", Type: StepCompleted,
				PlanVersion: "v3", Data: completed, EmittedAt: goldenT0, EngineAttemptID: "1",
				CausedBySignalID: "sig-1", ParentEventID: goldenEvent})
			require.NoError(t, err)
			// Assigned by the append authority and the adapter, not by New.
			e.EventID, e.RunSeq, e.PersistedAt = goldenEvent, 7, goldenT0.Add(time.Millisecond)
			e.AdapterVersion, e.EngineRunRef = "pg-1", json.RawMessage(`{"engine":"weft"}`)
			return e
		}, Event{
			SchemaVersion: 1, RunID: goldenRun, RunSeq: 7, EventID: goldenEvent, StepID: "extract",
			EngineAttemptID: "1", LogicalAttemptID: "2", EventType: StepCompleted,
			EventData:      json.RawMessage(`{"output":{"rows":3},"artifacts":[{"uri":"s3://bucket/run/manifest.json","kind":"dbt-manifest","sha256":"ab12","sizeBytes":42,"expiresAt":"2024-07-31T12:00:00Z"}]}`),
			IdempotencyKey: IdempotencyKey(goldenRun, "extract", "2", StepCompleted, "v3"),
			EmittedAt:      goldenT0, PersistedAt: goldenT0.Add(time.Millisecond), AdapterVersion: "pg-1",
			EngineRunRef: json.RawMessage(`{"engine":"weft"}`), CausedBySignalID: "sig-1", ParentEventID: goldenEvent,
		}, json.Unmarshal),
		goldentest.JSON("envelope_run_v1", func(t testing.TB) Event {
			t.Helper()
			e, err := New(Spec{RunID: goldenRun, Type: RunCompleted, PlanVersion: "v3", EmittedAt: goldenT0})
			require.NoError(t, err)
			e.EventID = goldenEvent // random in New
			return e
		}, Event{
			SchemaVersion: 1, RunID: goldenRun, EventID: goldenEvent, EventType: RunCompleted,
			IdempotencyKey: IdempotencyKey(goldenRun, "", "", RunCompleted, "v3"), EmittedAt: goldenT0,
		}, json.Unmarshal),
		payloadRecord("RunApproved", RunApprovedData{TenantID: "t1", ProjectID: "p1", EnvironmentID: "prod",
			PlanID: "nightly", PlanVersion: "v3", RunRequestID: "req-1",
			Input: json.RawMessage(`{"date":"2024-07-01"}`), Plan: json.RawMessage(`{"schemaVersion":1,"planId":"nightly"}`)}),
		payloadRecord("RunApprovedChild", RunApprovedData{TenantID: "t1", ProjectID: "p1", EnvironmentID: "prod",
			PlanID: "charge", PlanVersion: "v1", RunRequestID: ChildRunRequestID(goldenRun, "pay", 1),
			Input: json.RawMessage(`{"amount":5}`), Plan: json.RawMessage(`{"schemaVersion":1,"planId":"charge"}`),
			Parent: &RunParent{RunID: goldenRun, StepID: "pay", LogicalAttemptID: "1", PlanVersion: "v3", Depth: 1}}),
		payloadRecord("ChildRunEnded", ChildRunEndedData{ChildRunID: ChildRunID(goldenRun, "pay", 1, goldenT0),
			Status: RunStatusFailed, Error: &stepErr, Reason: "step \"charge\" failed: E_TIMEOUT"}),
		payloadRecord("ChildRunEndedCompleted", ChildRunEndedData{ChildRunID: ChildRunID(goldenRun, "pay", 1, goldenT0),
			Status: RunStatusCompleted, Output: json.RawMessage(`{"charged":5}`)}),
		payloadRecord("RunApprovedRerun", RunApprovedData{TenantID: "t1", ProjectID: "p1", EnvironmentID: "prod",
			PlanID: "nightly", PlanVersion: "v3", RunRequestID: "rerun-1", Input: json.RawMessage(`{"date":"2024-07-02"}`),
			Plan:    json.RawMessage(`{"schemaVersion":1,"planId":"nightly"}`),
			RerunOf: &RerunOf{RunID: goldenRun, FromStepID: "load", Reuse: []ReusedStep{{StepID: "extract", RunSeq: 5}}}}),
		payloadRecord("RunApprovedLabels", RunApprovedData{TenantID: "t1", ProjectID: "p1", EnvironmentID: "prod",
			PlanID: "nightly", PlanVersion: "v3", RunRequestID: "req-2", Plan: json.RawMessage(`{"schemaVersion":1,"planId":"nightly"}`),
			Labels: map[string]string{"team": "data", "app.example.com/tier": "batch", "note": ""}}),
		payloadRecord("StepCompletedReused", StepCompletedData{Output: json.RawMessage(`{"rows":3}`), Artifacts: []ArtifactRef{},
			ReusedFrom: &EventRef{RunID: goldenRun, RunSeq: 5}}),
		payloadRecord("StepSkippedReused", StepSkippedData{Reason: "CONDITION_FALSE", ReusedFrom: &EventRef{RunID: goldenRun, RunSeq: 6}}),
		payloadRecord("StepScheduledChild", StepScheduledData{Input: json.RawMessage(`{"amount":5}`),
			ChildRunID: ChildRunID(goldenRun, "pay", 1, goldenT0)}),
		payloadRecord("RunStarted", RunStartedData{EngineRunRef: json.RawMessage(`{"engine":"weft"}`),
			DelayedUntil: goldenT0.Add(time.Minute)}),
		payloadRecord("StepScheduled", StepScheduledData{Activity: "dbt.run", Queue: "default"}),
		payloadRecord("StepScheduledResolved", StepScheduledData{Activity: "dbt.run", Queue: "default",
			Input: json.RawMessage(`{"date":"2024-07-01","rows":3}`)}),
		payloadRecord("StepStarted", StepStartedData{WorkerID: "worker-1"}),
		payloadRecord("StepStartedAt", StepStartedData{WorkerID: "worker-1", StartedAt: goldenT0.Add(-time.Second)}),
		payloadRecord("StepCompleted", completed),
		payloadRecord("StepFailed", StepFailedData{Error: stepErr}),
		payloadRecord("StepSkipped", StepSkippedData{Reason: "upstream failed"}),
		payloadRecord("StepRetryScheduled", StepRetryScheduledData{Error: stepErr, RetryAt: goldenT0.Add(time.Second),
			NextLogicalAttemptID: "3"}),
		payloadRecord("RunFailed", RunFailedData{Reason: "step failed", StepID: "extract", Error: &stepErr}),
		payloadRecord("RunCompleted", RunCompletedData{Output: json.RawMessage(`{"rows":3,"report":"s3://bucket/run/report.csv"}`)}),
		payloadRecord("RunCancelled", RunCancelledData{Reason: "operator"}),
		payloadRecord("RunPaused", RunPausedData{Reason: "maintenance"}),
		payloadRecord("RunQueued", RunQueuedData{EnvironmentID: "cust-1", Running: 2, Limit: 2, Ahead: 1,
			Reason: RunQueuedReason("cust-1", 2, 2, 1)}),
		payloadRecord("SignalAccepted", SignalAcceptedData{SignalName: "approve", SignalID: "sig-1",
			Payload: json.RawMessage(`{"ok":true}`), ExpiresAt: goldenT0.Add(24 * time.Hour)}),
		payloadRecord("SignalRejected", SignalRejectedData{SignalName: "approve", SignalID: "sig-2", Reason: "rate limited"}),
		payloadRecord("SignalApplied", SignalAppliedData{SignalID: "sig-1", SignalName: "approve",
			Outcome: SignalOutcomeIgnored, Code: SignalCodeNotWaiting, Reason: "no step waits", StepIDs: []string{"gate"}}),
		goldentest.JSON("RunSnapshot", func(t testing.TB) RunSnapshot {
			t.Helper()
			step := func(seq int64, typ Type, attempt string, data any) Event {
				raw, err := MarshalData(data)
				require.NoError(t, err)
				return Event{SchemaVersion: 1, RunID: goldenRun, RunSeq: seq, EventType: typ, StepID: "extract",
					LogicalAttemptID: attempt, EngineAttemptID: "1", EventData: raw, EmittedAt: goldenT0.Add(time.Duration(seq) * time.Second)}
			}
			run := func(seq int64, typ Type, data any) Event {
				e := step(seq, typ, "", data)
				e.StepID, e.EngineAttemptID = "", ""
				return e
			}
			s, err := Project(goldenRun, []Event{
				run(1, RunApproved, RunApprovedData{TenantID: "t1"}),
				run(2, RunStarted, RunStartedData{}),
				step(3, StepStarted, "1", StepStartedData{}),
				step(4, StepCompleted, "1", completed),
				run(5, RunFailed, RunFailedData{Reason: "step failed", Error: &stepErr}),
			})
			require.NoError(t, err)
			return s
		}, RunSnapshot{
			RunID: goldenRun, Status: RunStatusFailed, LastEventSeq: 5,
			Steps: []StepSnapshot{{StepID: "extract", Status: StepStatusSuccess, LogicalAttemptID: "1", EngineAttemptID: "1",
				StartedAt: timePtr(goldenT0.Add(3 * time.Second)), CompletedAt: timePtr(goldenT0.Add(4 * time.Second)),
				Artifacts: []ArtifactRef{artifact}, Attempts: 1}},
			Artifacts: []ArtifactRef{artifact}, StartedAt: timePtr(goldenT0.Add(2 * time.Second)),
			CompletedAt: timePtr(goldenT0.Add(5 * time.Second)), TotalDurationMs: new(int64(3000)),
			Error: &stepErr,
		}, json.Unmarshal),
		// A cancelled run: RunCancelled ends its RUNNING attempt CANCELLED.
		goldentest.JSON("RunSnapshotCancelled", func(t testing.TB) RunSnapshot {
			t.Helper()
			at := func(seq int64) time.Time { return goldenT0.Add(time.Duration(seq) * time.Second) }
			evs := []Event{
				{RunSeq: 1, EventType: RunApproved},
				{RunSeq: 2, EventType: RunStarted},
				{RunSeq: 3, EventType: StepStarted, StepID: "extract", LogicalAttemptID: "1", EngineAttemptID: "1"},
				{RunSeq: 4, EventType: RunCancelled, EventData: json.RawMessage(`{"reason":"operator"}`)},
			}
			for i := range evs {
				evs[i].SchemaVersion, evs[i].RunID, evs[i].EmittedAt = 1, goldenRun, at(evs[i].RunSeq)
			}
			s, err := Project(goldenRun, evs)
			require.NoError(t, err)
			return s
		}, RunSnapshot{
			RunID: goldenRun, Status: RunStatusCancelled, LastEventSeq: 4,
			Steps: []StepSnapshot{{StepID: "extract", Status: StepStatusCancelled, LogicalAttemptID: "1", EngineAttemptID: "1",
				StartedAt: timePtr(goldenT0.Add(3 * time.Second)), CompletedAt: timePtr(goldenT0.Add(4 * time.Second)),
				Artifacts: []ArtifactRef{}, Error: &StepError{Code: CodeCancelled, Message: "operator"}, Attempts: 1}},
			Artifacts: []ArtifactRef{}, StartedAt: timePtr(goldenT0.Add(2 * time.Second)),
			CompletedAt: timePtr(goldenT0.Add(4 * time.Second)), TotalDurationMs: new(int64(2000)),
		}, json.Unmarshal),
		// A forEach step three children in: the run's input, the fan-out
		// and its children's progress.
		goldentest.JSON("RunSnapshotForEach", func(t testing.TB) RunSnapshot {
			t.Helper()
			ev := func(typ Type, stepID, data string) Event {
				return Event{EventType: typ, StepID: stepID, LogicalAttemptID: "1", EventData: json.RawMessage(data)}
			}
			evs := []Event{
				ev(RunApproved, "", `{"input":{"orders":[1,2,3]}}`),
				ev(StepScheduled, "each", `{"activity":"ship","queue":"q","input":[1,2,3],"forEach":{"count":3,"maxParallel":2,"failFast":false}}`),
				ev(StepStarted, "each[0]", ``),
				ev(StepCompleted, "each[0]", `{"output":1}`),
				ev(StepStarted, "each[1]", ``),
				ev(StepFailed, "each[1]", `{"error":{"code":"E","message":"m"}}`),
			}
			for i := range evs {
				evs[i].SchemaVersion, evs[i].RunID, evs[i].RunSeq = 1, goldenRun, int64(i+1)
				evs[i].EmittedAt = goldenT0.Add(time.Duration(i+1) * time.Second)
			}
			s, err := Project(goldenRun, evs)
			require.NoError(t, err)
			return s
		}, RunSnapshot{
			RunID: goldenRun, Status: RunStatusApproved, LastEventSeq: 6,
			Steps: []StepSnapshot{
				{StepID: "each", Status: StepStatusPending, LogicalAttemptID: "1", Artifacts: []ArtifactRef{},
					ForEach: &ForEachProgress{ForEachData: ForEachData{Count: 3, MaxParallel: 2}, Done: 1, Failed: 1}},
				{StepID: "each[0]", Status: StepStatusSuccess, LogicalAttemptID: "1", Artifacts: []ArtifactRef{},
					StartedAt: timePtr(goldenT0.Add(3 * time.Second)), CompletedAt: timePtr(goldenT0.Add(4 * time.Second)), Attempts: 1},
				{StepID: "each[1]", Status: StepStatusFailed, LogicalAttemptID: "1", Artifacts: []ArtifactRef{},
					StartedAt: timePtr(goldenT0.Add(5 * time.Second)), CompletedAt: timePtr(goldenT0.Add(6 * time.Second)),
					Error: &StepError{Code: "E", Message: "m"}, Attempts: 1},
			},
			Artifacts: []ArtifactRef{}, Input: json.RawMessage(`{"orders":[1,2,3]}`),
		}, json.Unmarshal),
	}
}

// TestPersistedGolden: today's reader decodes every golden record to the
// expected fields, also with a field only a newer writer knows (new
// writer, old reader), and today's writer still writes it byte for byte.
func TestPersistedGolden(t *testing.T) {
	t.Parallel()
	goldentest.CheckAll(t, filepath.Join("testdata", "persisted"), persistedRecords())
}

// TestProjectSkipsUnknownEventType: an event type a newer Weft writes,
// even a step-level one with a payload this version could not decode,
// moves only the watermark (new writer, old reader).
func TestProjectSkipsUnknownEventType(t *testing.T) {
	t.Parallel()
	base, err := Project(goldenRun, []Event{
		{SchemaVersion: 1, RunID: goldenRun, RunSeq: 1, EventType: RunApproved, EmittedAt: goldenT0},
		{SchemaVersion: 1, RunID: goldenRun, RunSeq: 2, EventType: RunStarted, EmittedAt: goldenT0},
	})
	require.NoError(t, err)
	unknown := Event{SchemaVersion: 2, RunID: goldenRun, RunSeq: 3, StepID: "extract", LogicalAttemptID: "1",
		EventType: "StepHeartbeatV2", EventData: json.RawMessage(`"not an object"`), EmittedAt: goldenT0}
	require.False(t, unknown.EventType.Known())
	got, err := ProjectIncremental(base, []Event{unknown})
	require.NoError(t, err)
	want := base
	want.LastEventSeq = 3
	require.Equal(t, want, got)
}
