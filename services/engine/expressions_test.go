package engine_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine"
)

// Data flows through a run: the run's input reaches the first step, each
// step's output the next, through the expressions of their inputs, and
// every StepScheduled records the input its attempt ran with.
func TestRunInputAndOutputsFlowThroughExpressions(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	lane, err := streams.TaskLaneConsumer("default", streams.LaneToken("acme"), 0, 0)
	require.NoError(t, err)
	serve := func(tk task.Task, report func(task.Result)) {
		report(task.NewResult(tk, task.Started, "", "raw"))
		report(echo(tk))
	}
	// The engine makes the queue's lanes stream with its first task; the
	// raw worker's consumer needs it first.
	require.NoError(t, streams.EnsureTaskLanes(t.Context(), s.js, streams.Config{}, "default"))
	rawWorkerOn(t, s.js, streams.TaskLanesStream("default"), lane, serve) // acme's tasks, on its lane
	p := parsePlan(t, `{"planId":"flow","planVersion":"1","output":"steps.b.output.line","steps":[
		{"id":"a","activity":"echo","input":{"order":"${{ input.orderId }}","qty":"${{ input.qty * 2 }}"}},
		{"id":"b","activity":"echo","dependsOn":["a"],"input":{"line":"order ${{ steps.a.output.order }} x${{ steps.a.output.qty }} for ${{ run.tenantId }}"}}]}`)
	runID := s.approve(t, runstart.Request{Plan: validated(t, p), TenantID: "acme", Input: json.RawMessage(`{"orderId": "o-17", "qty": 3}`)})

	evs := s.waitTerminal(t, runID)
	snap, err := events.Project(runID, evs)
	require.NoError(t, err)
	require.Equal(t, events.RunStatusCompleted, snap.Status)
	require.JSONEq(t, `"order o-17 x6 for acme"`, string(snap.Output), "the plan's output, recorded on RunCompleted")
	outputs := map[string]string{}
	inputs := map[string]string{}
	for _, e := range evs {
		switch e.EventType {
		case events.StepCompleted:
			var d events.StepCompletedData
			require.NoError(t, e.Data(&d))
			outputs[e.StepID] = string(d.Output)
		case events.StepScheduled:
			var d events.StepScheduledData
			require.NoError(t, e.Data(&d))
			inputs[e.StepID] = string(d.Input)
		default:
		}
	}
	require.JSONEq(t, `{"order": "o-17", "qty": 6}`, outputs["a"])
	require.JSONEq(t, `{"line": "order o-17 x6 for acme"}`, outputs["b"])
	require.JSONEq(t, outputs["b"], inputs["b"], "the recorded input is what the activity got")
}

// A failure handled by an anyFailed step does not fail the run: the
// compensation runs, the cleanup runs after everything, and the run
// completes with the failed step recorded FAILED.
func TestHandledFailureCompletesTheRun(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", failOn("charge", "CARD_DECLINED"))
	runID := s.start(t, parsePlan(t, `{"planId":"order","planVersion":"1","steps":[
		{"id":"charge","activity":"x"},
		{"id":"ship","activity":"x","dependsOn":["charge"]},
		{"id":"refund","activity":"x","dependsOn":["charge"],"runIf":"anyFailed","handles":["charge"]},
		{"id":"close","activity":"x","dependsOn":["ship","refund"],"runIf":"allDone"}]}`))

	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	require.Equal(t, map[string]events.StepStatus{
		"charge": events.StepStatusFailed, "ship": events.StepStatusSkipped,
		"refund": events.StepStatusSuccess, "close": events.StepStatusSuccess,
	}, stepStatuses(t, runID, evs))
}

// A plan with an input schema (schemaVersion 3) runs as its schema types
// it: the engine reads the plan back from RunApproved and evaluates
// input.total, a whole number where the schema says "number", as a
// double, so an expression that mixes it with a double runs.
func TestTypedInputRunsAsItsSchemaTypesIt(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", echo)
	p := parsePlan(t, `{"planId":"typed","planVersion":"1","output":"steps.a.output.t",
		"inputSchema":{"type":"object","required":["total"],"properties":{"total":{"type":"number"}}},
		"steps":[{"id":"a","activity":"echo","input":{"t":"${{ input.total * 2.5 }}"}}]}`)
	require.Equal(t, 3, p.SchemaVersion)
	runID := s.approve(t, runstart.Request{Plan: validated(t, p), Input: json.RawMessage(`{"total": 3}`)})
	evs := s.waitTerminal(t, runID)
	snap, err := events.Project(runID, evs)
	require.NoError(t, err)
	require.Equal(t, events.RunStatusCompleted, snap.Status)
	require.JSONEq(t, `7.5`, string(snap.Output))
}
