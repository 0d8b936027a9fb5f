package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/events"
)

// A signal that could have no effect is refused with a typed error the
// caller can branch on, and is not retried.
func TestSignalRefusalsAreTyped(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{errAnswer(t, http.StatusConflict, client.CodeRunTerminal, "run has ended COMPLETED",
		map[string]any{"runId": "run-1", "status": "COMPLETED"})})
	_, err := b.client.Signal(context.Background(), "run-1", api.SignalRequest{SignalName: "PAUSE"})
	require.ErrorIs(t, err, client.ErrRunTerminal)
	require.NotErrorIs(t, err, client.ErrUnknownSignal)
	require.True(t, client.IsCode(err, client.CodeRunTerminal))
	require.Len(t, b.gw.requests(), 1, "not retried")

	b = setup(t, []answer{errAnswer(t, http.StatusBadRequest, client.CodeUnknownSignal, `no use for "aprove"`,
		map[string]any{"accepts": []string{"PAUSE", "RESUME", "CANCEL", "RETRY_STEP", "approve"}})})
	_, err = b.client.Signal(context.Background(), "run-1", api.SignalRequest{SignalName: "aprove"})
	require.ErrorIs(t, err, client.ErrUnknownSignal)
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, []string{"PAUSE", "RESUME", "CANCEL", "RETRY_STEP", "approve"}, e.Accepts())
	require.Len(t, b.gw.requests(), 1, "not retried")
}

// event is an event of testRunID at seq.
func event(t *testing.T, seq int64, typ events.Type, key string, data any) events.Event {
	t.Helper()
	raw, err := json.Marshal(data)
	require.NoError(t, err)
	return events.Event{RunID: testRunID, RunSeq: seq, EventType: typ, LogicalAttemptID: key, EventData: raw}
}

// applied is the SignalApplied of signal id named name, with outcome.
func applied(t *testing.T, seq int64, name, id, outcome, code string) events.Event {
	t.Helper()
	return event(t, seq, events.SignalApplied, "", events.SignalAppliedData{SignalID: id, SignalName: name,
		Outcome: outcome, Code: code, Reason: "because " + outcome})
}

// WaitSignal reads the log past the signal's acceptance, waits for events
// it has not read, and returns the first SignalApplied of that signal.
func TestWaitSignal(t *testing.T) {
	t.Parallel()
	res := acceptedResult(testRunID, "PAUSE", "p-1")
	accepted := event(t, 3, events.SignalAccepted, res.SignalStorageKey, events.SignalAcceptedData{SignalName: "PAUSE", SignalID: "p-1"})
	b := setupRead(t,
		jsonAnswer(t, http.StatusOK, api.EventPage{Events: []events.Event{
			applied(t, 2, "PAUSE", "p-1", events.SignalOutcomeIgnored, "RUN_NOT_RUNNING"), // an earlier acceptance's
			accepted}, NextAfterSeq: 3, More: true}),
		jsonAnswer(t, http.StatusOK, api.EventPage{Events: []events.Event{
			applied(t, 4, "PAUSE", "other", events.SignalOutcomeApplied, "")}, NextAfterSeq: 4}),
		jsonAnswer(t, http.StatusOK, runView(6, events.RunStatusPaused)),
		jsonAnswer(t, http.StatusOK, api.EventPage{Events: []events.Event{
			event(t, 5, events.RunPaused, "", events.RunPausedData{}),
			applied(t, 6, "PAUSE", "p-1", events.SignalOutcomeApplied, "")}, NextAfterSeq: 6}))
	v, err := b.client.WaitSignal(context.Background(), &res)
	require.NoError(t, err)
	require.Equal(t, events.SignalOutcomeApplied, v.Outcome)
	require.Equal(t, "because applied", v.Reason)

	reqs := b.api.requests()
	require.Len(t, reqs, 4)
	require.Equal(t, "0", reqs[0].query.Get("afterSeq"))
	require.Equal(t, "3", reqs[1].query.Get("afterSeq"))
	require.Equal(t, "5", reqs[2].query.Get("waitForSeq"), "waits for what it has not read")
	require.Equal(t, "4", reqs[3].query.Get("afterSeq"))
}

// An ignored signal's verdict comes with a *SignalIgnoredError that says
// why.
func TestWaitSignalIgnored(t *testing.T) {
	t.Parallel()
	res := acceptedResult(testRunID, "RESUME", "r-1")
	b := setupRead(t, jsonAnswer(t, http.StatusOK, api.EventPage{Events: []events.Event{
		event(t, 7, events.SignalAccepted, res.SignalStorageKey, events.SignalAcceptedData{SignalName: "RESUME", SignalID: "r-1"}),
		applied(t, 8, "RESUME", "r-1", events.SignalOutcomeIgnored, "RUN_NOT_PAUSED")}, NextAfterSeq: 8}))
	v, err := b.client.WaitSignal(context.Background(), &res)
	var ignored *client.SignalIgnoredError
	require.ErrorAs(t, err, &ignored)
	require.Equal(t, client.SignalIgnoredError{RunID: testRunID, SignalName: "RESUME", SignalID: "r-1",
		Code: "RUN_NOT_PAUSED", Reason: "because ignored"}, *ignored)
	require.Equal(t, events.SignalOutcomeIgnored, v.Outcome)
	require.EqualError(t, err, "client: signal RESUME to run "+testRunID+" was ignored (RUN_NOT_PAUSED): because ignored")

	_, err = b.client.WaitSignal(context.Background(), &api.AcceptedSignalResult{})
	require.ErrorIs(t, err, client.ErrInvalidRequest)
}
