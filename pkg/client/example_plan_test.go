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

// Register a plan version, push it again (a repeat stores nothing), then
// start its newest version by reference instead of sending the plan. A
// stand-in for the gateway answers here; point New at the real one.
func ExampleClient_PushPlan() {
	gateway := httptest.NewServer(examplePlanGateway())
	defer gateway.Close()
	ctx := context.Background()
	c, err := client.New(gateway.URL, client.WithToken("my-api-key"))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	push := api.PlanPushRequest{ProjectID: "reports",
		Plan: json.RawMessage(`{"planId":"report","planVersion":"2","steps":[{"id":"a","activity":"echo"}]}`)}
	for range 2 {
		v, created, err := c.PushPlan(ctx, push)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("plan %s@%s created: %v\n", v.PlanID, v.PlanVersion, created)
	}
	run, err := c.StartRun(ctx, api.StartRunRequest{
		TenantID: "acme", ProjectID: "reports", EnvironmentID: "prod",
		PlanRef: &api.PlanRef{PlanID: "report", PlanVersion: api.PlanVersionLatest},
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("run", run.RunID, run.Status)
	// Output:
	// plan report@2 created: true
	// plan report@2 created: false
	// run run-3 APPROVED
}

// examplePlanGateway answers plan pushes and a start by reference the way
// the gateway does.
func examplePlanGateway() http.Handler {
	mux := http.NewServeMux()
	stored := map[string]bool{}
	mux.HandleFunc("POST /v1/plans", func(w http.ResponseWriter, r *http.Request) {
		var req api.PlanPushRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		var p struct{ PlanID, PlanVersion string }
		_ = json.Unmarshal(req.Plan, &p)
		status := http.StatusCreated
		if stored[p.PlanID+"@"+p.PlanVersion] {
			status = http.StatusOK
		}
		stored[p.PlanID+"@"+p.PlanVersion] = true
		writeJSON(w, status, api.PlanVersion{ProjectID: req.ProjectID, PlanID: p.PlanID, PlanVersion: p.PlanVersion})
	})
	mux.HandleFunc("POST /v1/runs", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusCreated, api.StartRunResult{RunID: "run-3", Status: "APPROVED"})
	})
	return mux
}
