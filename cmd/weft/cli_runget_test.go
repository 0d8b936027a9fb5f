package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/cli"
	"github.com/weftrun/weft/pkg/events"
)

// runGetJSON is what `weft run get -o json` adds to the run's view.
type runGetJSON struct {
	RunID       string                        `json:"runId"`
	Input       json.RawMessage               `json:"input"`
	StepDetails map[string]*events.StepDetail `json:"stepDetails"`
}

// TestRunGetStepData: `weft run get` shows the run's input and each step's
// input and output, a forEach step as one row with its children's
// progress, and a skip's reason; -o json carries every step's detail,
// the children's too.
func TestRunGetStepData(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t)
	r := s.weft(t, "run", "start", "-f", example("order-pipeline.yaml"), "--wait", "-o", "json",
		"--input", `{"orderId": "o-9", "customer": "Cy", "items": [{"sku": "tea", "qty": 2}, {"sku": "jam", "qty": 1}]}`)
	require.Equal(t, cli.ExitOK, r.code, "err: %v\nstderr: %s", r.err, r.errOut)
	runID := decode[runGetJSON](t, r).RunID

	text := s.weft(t, "run", "get", runID)
	require.NoError(t, text.err, text.errOut)
	rows := map[string]string{}
	for line := range strings.Lines(text.out) {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = line
		}
	}
	require.Contains(t, rows["Input"], `"customer":"Cy"`, "the run's input")
	require.Contains(t, rows, "STEP")
	require.Contains(t, rows["STEP"], "INPUT")
	require.Contains(t, rows["STEP"], "OUTPUT")
	require.Contains(t, rows["reserve"], "×2 (2 done, 0 running, 0 failed)")
	require.Contains(t, rows["reserve"], `[{"qty":2,"sku":"tea"},{"qty":1,"sku":"jam"}]`, "the evaluated list")
	require.Contains(t, rows["charge"], `{"key":"charge o-9 for 2 lines","times":0}`, "the resolved input")
	require.Contains(t, rows["gift-note"], "SKIPPED: its if condition was false (CONDITION_FALSE)")
	require.NotContains(t, text.out, "reserve[0]", "a forEach step's children are counted in its row")

	got := decode[runGetJSON](t, s.weft(t, "run", "get", runID, "-o", "json"))
	require.JSONEq(t, `{"orderId": "o-9", "customer": "Cy", "items": [{"sku": "tea", "qty": 2}, {"sku": "jam", "qty": 1}]}`, string(got.Input))
	child := got.StepDetails["reserve[1]"]
	require.NotNil(t, child)
	require.JSONEq(t, `{"sku": "jam", "qty": 1, "line": 2}`, string(child.Input))
	require.JSONEq(t, `{"sku": "jam", "qty": 1, "line": 2}`, string(child.Output), "echo answers its input")
	require.Len(t, child.Attempts, 1)
	require.NotEmpty(t, child.Attempts[0].WorkerID)
	require.Equal(t, events.StepStatusSuccess, child.Attempts[0].Status)
	require.Equal(t, &events.StepSkip{Reason: "CONDITION_FALSE", Condition: "gift-note"}, got.StepDetails["gift-note"].Skip)
	require.Equal(t, &events.ForEachData{Count: 2, MaxParallel: 2, FailFast: true}, got.StepDetails["reserve"].ForEach)
}
