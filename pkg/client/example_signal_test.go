package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/events"
)

// Send a signal and wait for the engine's verdict on it. A misspelt name
// is refused at once, with the names the run takes; RESUME of a run that
// is not paused is accepted, then ignored. Stand-ins for the gateway and
// the read API answer here.
func ExampleClient_WaitSignal() {
	srv := httptest.NewServer(exampleSignalAPI())
	defer srv.Close()
	ctx := context.Background()
	c, err := client.New(srv.URL, client.WithToken("my-api-key"), client.WithReadURL(srv.URL))
	if err != nil {
		fmt.Println("error:", err)
		return
	}

	_, err = c.Signal(ctx, "run-7", api.SignalRequest{SignalName: "aprove"})
	var refused *client.Error
	if errors.Is(err, client.ErrUnknownSignal) && errors.As(err, &refused) {
		fmt.Println("refused; the run takes", refused.Accepts())
	}

	acc, err := c.Signal(ctx, "run-7", api.SignalRequest{SignalName: "RESUME", SignalID: "resume-1"})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	_, err = c.WaitSignal(ctx, acc)
	var ignored *client.SignalIgnoredError
	if errors.As(err, &ignored) {
		fmt.Println("ignored:", ignored.Code, "-", ignored.Reason)
	}
	// Output:
	// refused; the run takes [PAUSE RESUME CANCEL RETRY_STEP approve]
	// ignored: RUN_NOT_PAUSED - RESUME needs a PAUSED run; the run is RUNNING
}

// exampleSignalAPI answers signals and the run's events the way the
// gateway and the read API do.
func exampleSignalAPI() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/runs/{runId}/signals", func(w http.ResponseWriter, r *http.Request) {
		var req api.SignalRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.SignalName == "aprove" {
			writeJSON(w, http.StatusBadRequest, api.ErrorBody{Error: api.Error{Code: client.CodeUnknownSignal,
				Message: `run has no use for a signal named "aprove"`,
				Details: map[string]any{"accepts": []string{"PAUSE", "RESUME", "CANCEL", "RETRY_STEP", "approve"}}}})
			return
		}
		writeJSON(w, http.StatusAccepted, api.AcceptedSignalResult{Accepted: true, WorkflowID: r.PathValue("runId"),
			SignalName: req.SignalName, SignalID: req.SignalID, SignalStorageKey: "sig:1"})
	})
	mux.HandleFunc("GET /v1/runs/{runId}/events", func(w http.ResponseWriter, r *http.Request) {
		accepted, _ := json.Marshal(events.SignalAcceptedData{SignalName: "RESUME", SignalID: "resume-1"})
		verdict, _ := json.Marshal(events.SignalAppliedData{SignalName: "RESUME", SignalID: "resume-1",
			Outcome: events.SignalOutcomeIgnored, Code: events.SignalCodeRunNotPaused,
			Reason: "RESUME needs a PAUSED run; the run is RUNNING"})
		writeJSON(w, http.StatusOK, api.EventPage{NextAfterSeq: 4, Events: []events.Event{
			{RunID: r.PathValue("runId"), RunSeq: 3, EventType: events.SignalAccepted, LogicalAttemptID: "sig:1", EventData: accepted},
			{RunID: r.PathValue("runId"), RunSeq: 4, EventType: events.SignalApplied, EventData: verdict}}})
	})
	return mux
}
