package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

// Start a run, then pause it. A stand-in for the gateway answers here; point
// New at the real one.
func Example() {
	gateway := httptest.NewServer(exampleGateway())
	defer gateway.Close()
	if err := startAndPause(context.Background(), gateway.URL); err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// run run-7 APPROVED duplicate: false
	// signal PAUSE pause-1 accepted: true
}

func startAndPause(ctx context.Context, gatewayURL string) error {
	c, err := client.New(gatewayURL, client.WithToken("my-api-key"))
	if err != nil {
		return err
	}
	run, err := c.StartRun(ctx, api.StartRunRequest{
		TenantID: "acme", ProjectID: "billing", EnvironmentID: "prod",
		PlanID: "invoice", PlanVersion: "v3", RunRequestID: "invoice-2026-01",
		Plan:  json.RawMessage(`{"id":"invoice","version":"v3","steps":[]}`),
		Input: json.RawMessage(`{"month":"2026-01"}`),
	})
	if err != nil {
		return err
	}
	fmt.Println("run", run.RunID, run.Status, "duplicate:", run.Duplicate)

	acc, err := c.Signal(ctx, run.RunID, api.SignalRequest{SignalName: "PAUSE", SignalID: "pause-1"})
	switch {
	case client.IsCode(err, api.CodeSignalAcceptanceIndeterminate):
		fmt.Println("ask an operator before sending it again")
	case err != nil:
		return err
	default:
		fmt.Println("signal", acc.SignalName, acc.SignalID, "accepted:", acc.Accepted)
	}
	return nil
}

// exampleGateway answers a start and a signal the way the gateway does.
func exampleGateway() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/runs", func(w http.ResponseWriter, r *http.Request) {
		var req api.StartRunRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		writeJSON(w, http.StatusCreated, api.StartRunResult{RunID: "run-7", RunRequestID: req.RunRequestID, Status: "APPROVED"})
	})
	mux.HandleFunc("POST /v1/runs/{runId}/signals", func(w http.ResponseWriter, r *http.Request) {
		var req api.SignalRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		writeJSON(w, http.StatusAccepted, api.AcceptedSignalResult{
			Accepted: true, WorkflowID: r.PathValue("runId"), SignalName: req.SignalName, SignalID: req.SignalID,
		})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Branch on the gateway's error code; the *Error carries the rest.
func ExampleIsCode() {
	err := fmt.Errorf("sending: %w", &client.Error{
		Status: http.StatusTooManyRequests, Code: api.CodeRateLimited, Message: "too many signals for this run",
	})
	if client.IsCode(err, api.CodeRateLimited) {
		fmt.Println("rate limited:", err)
	}
	// Output:
	// rate limited: sending: client: RateLimited (HTTP 429): too many signals for this run
}
