package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/events"
)

// Follow a run to its end with long polls. A stand-in for the read API
// answers here; point WithReadURL at the projector (under `weft dev`,
// http://127.0.0.1:8081).
func ExampleClient_WaitRun() {
	readAPI := httptest.NewServer(exampleReadAPI())
	defer readAPI.Close()
	c, err := client.New("http://127.0.0.1:8080", client.WithToken("my-api-key"), client.WithReadURL(readAPI.URL))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	ctx := context.Background()
	var seq int64
	for {
		v, err := c.WaitRun(ctx, "run-7", seq)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("runSeq %d: %s, %d/%d steps done\n", v.LastEventSeq, v.Status, v.StepsDone(), v.StepsTotal())
		if v.Status.Terminal() {
			break
		}
		seq = v.LastEventSeq
	}
	// Output:
	// runSeq 1: RUNNING, 0/2 steps done
	// runSeq 2: RUNNING, 1/2 steps done
	// runSeq 3: COMPLETED, 2/2 steps done
}

// exampleReadAPI answers each long poll with the run one event further on,
// the way the read API answers once the run changes.
func exampleReadAPI() http.Handler {
	views := []api.RunView{
		exampleView(1, events.RunStatusRunning),
		exampleView(2, events.RunStatusRunning, "a"),
		exampleView(3, events.RunStatusCompleted, "a", "b"),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/runs/{runId}", func(w http.ResponseWriter, r *http.Request) {
		seq, _ := strconv.Atoi(r.URL.Query().Get("waitForSeq"))
		writeJSON(w, http.StatusOK, views[min(max(seq, 1), len(views))-1])
	})
	return mux
}

// exampleView is run-7 at seq, with the steps done.
func exampleView(seq int64, status events.RunStatus, done ...string) api.RunView {
	v := api.RunView{
		RunSnapshot: events.RunSnapshot{RunID: "run-7", Status: status, LastEventSeq: seq},
		Plan:        api.RunPlan{Steps: []api.PlanStep{{ID: "a", Activity: "echo"}, {ID: "b", Activity: "echo", DependsOn: []string{"a"}}}},
	}
	for _, id := range done {
		v.Steps = append(v.Steps, events.StepSnapshot{StepID: id, Status: events.StepStatusSuccess})
	}
	return v
}
