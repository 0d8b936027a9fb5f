package events

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEventDataRoundTrip(t *testing.T) {
	t.Parallel()
	want := StepRetryScheduledData{
		Error:                StepError{Code: "TIMEOUT", Message: "deadline", Retryable: true, Category: "INFRA"},
		RetryAt:              time.Date(2026, 2, 11, 10, 0, 0, 0, time.UTC),
		NextLogicalAttemptID: "2",
	}
	raw, err := MarshalData(want)
	require.NoError(t, err)
	var got StepRetryScheduledData
	require.NoError(t, Event{EventData: raw}.Data(&got))
	require.Equal(t, want, got)
}

func TestEventDataResetsTarget(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"", "null", `{}`} {
		d := StepSkippedData{Reason: "stale"}
		require.NoError(t, Event{EventData: json.RawMessage(raw)}.Data(&d), "data %q", raw)
		require.Equal(t, StepSkippedData{}, d, "data %q", raw)
	}
	// Fields absent from the data are zero, not left over from before.
	d := RunFailedData{Reason: "old", StepID: "old"}
	require.NoError(t, Event{EventData: json.RawMessage(`{"reason":"new"}`)}.Data(&d))
	require.Equal(t, RunFailedData{Reason: "new"}, d)
}

func TestEventDataIgnoresUnknownFields(t *testing.T) {
	t.Parallel()
	var d StepSkippedData
	require.NoError(t, Event{EventData: json.RawMessage(`{"reason":"r","addedInV2":1}`)}.Data(&d))
	require.Equal(t, StepSkippedData{Reason: "r"}, d)
}

func TestEventDataMalformed(t *testing.T) {
	t.Parallel()
	e := Event{RunID: "r1", RunSeq: 7, EventType: StepCompleted, EventData: json.RawMessage(`{"artifacts":"nope"}`)}
	var d StepCompletedData
	err := e.Data(&d)
	var me *MalformedEventError
	require.ErrorAs(t, err, &me)
	require.Equal(t, "r1", me.RunID)
	require.Equal(t, int64(7), me.RunSeq)
	require.Equal(t, StepCompleted, me.Type)
	var typeErr *json.UnmarshalTypeError
	require.ErrorAs(t, err, &typeErr, "the cause is unwrapped")
	require.ErrorContains(t, err, "runSeq 7")
}

func TestEventDataNeedsPointer(t *testing.T) {
	t.Parallel()
	e := Event{EventData: json.RawMessage(`{}`)}
	require.Error(t, e.Data(StepSkippedData{}))
	require.Error(t, e.Data((*StepSkippedData)(nil)))
	require.Error(t, e.Data(nil))
}

func TestMarshalData(t *testing.T) {
	t.Parallel()
	raw, err := MarshalData(nil)
	require.NoError(t, err)
	require.Nil(t, raw)

	_, err = MarshalData(func() {})
	require.Error(t, err)
	var unsupported *json.UnsupportedTypeError
	require.ErrorAs(t, err, &unsupported)
}

// TestEventDataJSONNames pins the wire names of every payload: they are
// persisted in the log, so renaming one is a breaking change.
func TestEventDataJSONNames(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 2, 11, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		v    any
		want string
	}{
		{ArtifactRef{URI: "s3://b/k", Kind: "log-bundle"}, `{"uri":"s3://b/k","kind":"log-bundle"}`},
		{ArtifactRef{URI: "u", Kind: "k", SHA256: "ab", SizeBytes: 3, ExpiresAt: at},
			`{"uri":"u","kind":"k","sha256":"ab","sizeBytes":3,"expiresAt":"2026-02-11T10:00:00Z"}`},
		{StepError{Code: "C", Message: "m"}, `{"code":"C","message":"m","retryable":false}`},
		{StepError{Code: "C", Message: "m", Retryable: true, Category: "USER"},
			`{"code":"C","message":"m","retryable":true,"category":"USER"}`},
		{RunApprovedData{TenantID: "t", ProjectID: "p", EnvironmentID: "e", PlanID: "pl", PlanVersion: "3", RunRequestID: "rr", Input: json.RawMessage(`{"a":1}`)},
			`{"tenantId":"t","projectId":"p","environmentId":"e","planId":"pl","planVersion":"3","runRequestId":"rr","input":{"a":1}}`},
		{RunStartedData{EngineRunRef: json.RawMessage(`{"workflowId":"w"}`)}, `{"engineRunRef":{"workflowId":"w"}}`},
		{RunStartedData{}, `{}`},
		{StepScheduledData{Activity: "dbt.run", Queue: "default"}, `{"activity":"dbt.run","queue":"default"}`},
		{StepStartedData{WorkerID: "w1"}, `{"workerId":"w1"}`},
		{StepStartedData{}, `{}`},
		{StepCompletedData{Output: json.RawMessage(`{"rows":1}`), Artifacts: []ArtifactRef{{URI: "u", Kind: "k"}}},
			`{"output":{"rows":1},"artifacts":[{"uri":"u","kind":"k"}]}`},
		{StepFailedData{Error: StepError{Code: "C", Message: "m"}}, `{"error":{"code":"C","message":"m","retryable":false}}`},
		{StepSkippedData{Reason: "r"}, `{"reason":"r"}`},
		{StepRetryScheduledData{Error: StepError{Code: "C"}, RetryAt: at, NextLogicalAttemptID: "2"},
			`{"error":{"code":"C","message":"","retryable":false},"retryAt":"2026-02-11T10:00:00Z","nextLogicalAttemptId":"2"}`},
		{RunFailedData{Reason: "r"}, `{"reason":"r"}`},
		{RunFailedData{Reason: "r", StepID: "s", Error: &StepError{Code: "C"}},
			`{"reason":"r","stepId":"s","error":{"code":"C","message":"","retryable":false}}`},
		{RunCancelledData{Reason: "r"}, `{"reason":"r"}`},
		{RunPausedData{}, `{}`},
		{SignalAcceptedData{SignalName: "PAUSE", SignalID: "sg", Payload: json.RawMessage(`{"x":1}`)},
			`{"signalName":"PAUSE","signalId":"sg","payload":{"x":1}}`},
		{SignalRejectedData{SignalName: "PAUSE", SignalID: "sg", Reason: "denied"},
			`{"signalName":"PAUSE","signalId":"sg","reason":"denied"}`},
	}
	for _, tc := range cases {
		raw, err := MarshalData(tc.v)
		require.NoError(t, err)
		require.JSONEq(t, tc.want, string(raw), "%T", tc.v)
	}
}
