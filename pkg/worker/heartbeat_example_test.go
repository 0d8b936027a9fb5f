package worker_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/weftrun/weft/pkg/worker"
)

// An activity that copies pages and resumes where a timed-out attempt
// stopped: it heartbeats the next page after each one, and a retry starts
// from the last heartbeat's page (Input.LastHeartbeat). Its plan step sets
// heartbeatTimeout.
func ExampleInput_Heartbeat() {
	copyPages := func(ctx context.Context, in worker.Input) (worker.Output, error) {
		var progress struct {
			Page int `json:"page"`
		}
		if len(in.LastHeartbeat) > 0 {
			if err := json.Unmarshal(in.LastHeartbeat, &progress); err != nil {
				return worker.Output{}, err
			}
		}
		for ; progress.Page < 100; progress.Page++ {
			// ... copy page progress.Page ...
			if err := in.Heartbeat(ctx, map[string]int{"page": progress.Page + 1}); err != nil {
				return worker.Output{}, fmt.Errorf("heartbeat: %w", err)
			}
		}
		return worker.NewOutput(map[string]int{"pages": progress.Page})
	}
	_ = copyPages // register it: w.Register("copy-pages", copyPages)
}
