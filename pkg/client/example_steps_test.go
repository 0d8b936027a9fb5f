package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/events"
)

// Show each step of a run with its input and output: the run's top-level
// steps (a forEach step once, with its children's progress), then each
// step's detail, then the first page of a forEach step's children. A
// stand-in for the read API answers here; point WithReadURL at the
// projector.
func ExampleClient_Step() {
	readAPI := httptest.NewServer(exampleStepsAPI())
	defer readAPI.Close()
	c, err := client.New("http://127.0.0.1:8080", client.WithToken("my-api-key"), client.WithReadURL(readAPI.URL))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	ctx := context.Background()
	v, err := c.GetRun(ctx, "run-7", client.TopSteps())
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, s := range v.Steps {
		d, err := c.Step(ctx, v.RunID, s.StepID)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("%s %s: input %s, output %s\n", s.StepID, s.Status, d.Input, d.Output)
		if s.ForEach == nil {
			continue
		}
		page, err := c.StepChildren(ctx, v.RunID, s.StepID, client.ChildFilter{Limit: 100})
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		for _, child := range page.Children {
			fmt.Printf("  %s %s\n", child.StepID, child.Status)
		}
	}
	// Output:
	// fetch SUCCESS: input {"url":"https://example.com"}, output ["a","b"]
	// each SUCCESS: input ["a","b"], output [1,2]
	//   each[0] SUCCESS
	//   each[1] SUCCESS
}

// exampleStepsAPI answers run-7's top-level view, its steps' details and
// its forEach step's children.
func exampleStepsAPI() http.Handler {
	done := func(id string) events.StepSnapshot {
		return events.StepSnapshot{StepID: id, Status: events.StepStatusSuccess}
	}
	each := done("each")
	each.ForEach = &events.ForEachProgress{ForEachData: events.ForEachData{Count: 2, MaxParallel: 10}, Done: 2}
	details := map[string]events.StepDetail{
		"fetch": {StepID: "fetch", Input: json.RawMessage(`{"url":"https://example.com"}`), Output: json.RawMessage(`["a","b"]`)},
		"each":  {StepID: "each", Input: json.RawMessage(`["a","b"]`), Output: json.RawMessage(`[1,2]`)},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/runs/{runId}", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, api.RunView{RunSnapshot: events.RunSnapshot{RunID: "run-7",
			Status: events.RunStatusCompleted, Steps: []events.StepSnapshot{done("fetch"), each}}})
	})
	mux.HandleFunc("GET /v1/runs/{runId}/steps/{stepId}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, details[r.PathValue("stepId")])
	})
	mux.HandleFunc("GET /v1/runs/{runId}/steps/{stepId}/children", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, api.ChildPage{Children: []events.StepSnapshot{done("each[0]"), done("each[1]")}, NextAfterIndex: 1})
	})
	return mux
}
