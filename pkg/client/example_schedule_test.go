package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

// Run a plan every weekday at 09:00 in Paris, catching up missed mornings;
// then send an event to a trigger twice: the redelivery starts nothing. A
// stand-in for the gateway answers here; point New at the real one.
func ExampleClient_CreateSchedule() {
	gateway := httptest.NewServer(exampleScheduleGateway())
	defer gateway.Close()
	ctx := context.Background()
	c, err := client.New(gateway.URL, client.WithToken("my-api-key"))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	s, err := c.CreateSchedule(ctx, api.ScheduleRequest{
		ScheduleID: "morning-report", TenantID: "acme", ProjectID: "reports", EnvironmentID: "prod",
		Cron: "0 9 * * MON-FRI", Timezone: "Europe/Paris",
		Plan:          json.RawMessage(`{"planId":"report","planVersion":"1","steps":[{"id":"a","activity":"echo"}]}`),
		MisfirePolicy: api.MisfireCatchup, MaxCatchup: 3,
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("schedule", s.ScheduleID, "next fire", s.NextFireAt.Format(time.RFC3339))

	for range 2 {
		res, err := c.SendTriggerEvent(ctx, "orders", api.TriggerEvent{EventID: "evt_42", Payload: json.RawMessage(`{"order":42}`)})
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Println("event", res.EventID, "run", res.RunID, "duplicate:", res.Duplicate)
	}
	// Output:
	// schedule morning-report next fire 2026-03-02T08:00:00Z
	// event evt_42 run run-9 duplicate: false
	// event evt_42 run run-9 duplicate: true
}

// exampleScheduleGateway answers a schedule create and trigger events the
// way the gateway does.
func exampleScheduleGateway() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/schedules", func(w http.ResponseWriter, r *http.Request) {
		var req api.ScheduleRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		next := time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)
		writeJSON(w, http.StatusCreated, api.Schedule{ScheduleID: req.ScheduleID, Cron: req.Cron, NextFireAt: &next})
	})
	seen := map[string]bool{}
	mux.HandleFunc("POST /v1/triggers/{triggerId}/events", func(w http.ResponseWriter, r *http.Request) {
		var ev api.TriggerEvent
		_ = json.NewDecoder(r.Body).Decode(&ev)
		dup := seen[ev.EventID]
		seen[ev.EventID] = true
		writeJSON(w, http.StatusCreated, api.TriggerEventResult{TriggerID: r.PathValue("triggerId"), EventID: ev.EventID,
			StartRunResult: api.StartRunResult{RunID: "run-9", RunRequestID: r.PathValue("triggerId") + ":" + ev.EventID,
				Status: "APPROVED", Duplicate: dup}})
	})
	return mux
}
