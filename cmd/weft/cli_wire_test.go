package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// mirrors asserts that the JSON of the projector's answer decodes into the
// pkg/api type with no field left over and encodes back to the same JSON:
// the client's types cannot drift from the read API's. (pkg/client may not
// import the service; this binary already does.)
func mirrors[T any](t *testing.T, served any) {
	t.Helper()
	wire, err := json.Marshal(served)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(wire))
	dec.DisallowUnknownFields()
	var mirrored T
	require.NoError(t, dec.Decode(&mirrored), "every field of %s", wire)
	back, err := json.Marshal(mirrored)
	require.NoError(t, err)
	require.JSONEq(t, string(wire), string(back))
}

// TestReadAPITypesMirrorProjector: the projector serves pkg/api's types
// itself; every answer survives a decode and re-encode unchanged.
func TestReadAPITypesMirrorProjector(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ms := int64(1500)
	stepErr := &events.StepError{Code: "E", Message: "m", Retryable: true, Category: "USER"}

	var view api.RunView
	view.RunSnapshot = events.RunSnapshot{
		RunID: "r", Status: events.RunStatusFailed, LastEventSeq: 9,
		Steps: []events.StepSnapshot{{StepID: "a", Status: events.StepStatusFailed, LogicalAttemptID: "2", EngineAttemptID: "1",
			StartedAt: &at, CompletedAt: &at, Error: stepErr, Attempts: 2,
			Artifacts: []events.ArtifactRef{{URI: "s3://b/k", Kind: "k", SHA256: "ab", SizeBytes: 3, ExpiresAt: at}}}},
		Artifacts: []events.ArtifactRef{}, StartedAt: &at, CompletedAt: &at, TotalDurationMs: &ms, FailedSteps: 1,
		EngineRunRef: json.RawMessage(`{"x":1}`), Error: stepErr, Queued: &events.QueueHold{Reason: "1 of 1 running", Since: at},
	}
	view.Stale = true
	view.Gap = &api.RunGap{AfterSeq: 9, SeenSeq: 11, Since: at}
	view.TenantID, view.ProjectID, view.EnvironmentID, view.PlanID, view.PlanVersion = "t", "p", "e", "hello", "1"
	view.CreatedAt, view.UpdatedAt, view.LagMs = at, at, 12
	view.Plan.Steps = []api.PlanStep{{ID: "a", Kind: "activity", Activity: "echo", DependsOn: []string{}},
		{ID: "g", Kind: "waitSignal", Signal: "approve", DependsOn: []string{"a"}}}
	mirrors[api.RunView](t, view)

	var row api.RunSummary
	row.RunID, row.TenantID, row.ProjectID, row.EnvironmentID, row.PlanID, row.PlanVersion = "r", "t", "p", "e", "hello", "1"
	row.Status, row.Stale, row.CreatedAt, row.StartedAt, row.CompletedAt = events.RunStatusCompleted, true, at, &at, &at
	row.TotalDurationMs, row.UpdatedAt, row.LastEventSeq, row.StepsTotal, row.StepsDone, row.FailedSteps = &ms, at, 7, 3, 2, 1
	mirrors[api.RunList](t, api.RunList{Runs: []api.RunSummary{row}, NextCursor: "c"})

	mirrors[api.EventPage](t, api.EventPage{Events: []events.Event{{SchemaVersion: 1, RunID: "r", RunSeq: 1,
		EventID: "e", StepID: "a", EventType: events.StepStarted, EventData: json.RawMessage(`{"k":"v"}`),
		IdempotencyKey: "i", EmittedAt: at, PersistedAt: at}}, NextAfterSeq: 1, More: true})
}
