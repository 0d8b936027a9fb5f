package engine_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/engine"
)

// forEachPlan loops over n elements, maxParallel 4, each element's input
// reading its item and index, and a step after it reads the outputs.
func forEachPlan(t *testing.T, n int) string {
	t.Helper()
	list := make([]string, n)
	for i := range list {
		list[i] = fmt.Sprintf(`{"sku": "s%d"}`, i)
	}
	return `{"planId":"fan","planVersion":"1","output":"steps.after.output.count","steps":[
		{"id":"fan","activity":"echo","forEach":"[` + strings.ReplaceAll(strings.Join(list, ","), `"`, `'`) + `]","maxParallel":4,
		 "input":{"sku":"${{ item.sku }}","i":"${{ index }}"}},
		{"id":"after","activity":"echo","dependsOn":["fan"],"input":{"count":"${{ size(steps.fan.output) }}","all":"${{ steps.fan.output }}"}}]}`
}

// requireFannedOut checks a completed forEach run of n elements: each
// element's logical attempt completed once, and the step's output lists
// their outputs in element order.
func requireFannedOut(t *testing.T, evs []events.Event, n int) {
	t.Helper()
	require.Equal(t, events.RunCompleted, terminal(evs))
	requireOncePerAttempt(t, evs)
	completed := map[string]int{}
	var output json.RawMessage
	for _, e := range evs {
		if e.EventType != events.StepCompleted {
			continue
		}
		completed[e.StepID]++
		if e.StepID == "fan" {
			var d events.StepCompletedData
			require.NoError(t, e.Data(&d))
			output = d.Output
		}
	}
	for i := range n {
		require.Equal(t, 1, completed[events.ChildStepID("fan", i)], "element %d", i)
	}
	var outs []struct {
		SKU string `json:"sku"`
		I   int    `json:"i"`
	}
	require.NoError(t, json.Unmarshal(output, &outs))
	require.Len(t, outs, n)
	for i, o := range outs {
		require.Equal(t, fmt.Sprintf("s%d", i), o.SKU)
		require.Equal(t, i, o.I)
	}
}

// A forEach step runs every element on real workers and the step after it
// reads their outputs; the run's output counts them.
func TestForEachRunsEveryElement(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, parsePlan(t, forEachPlan(t, 25)))
	evs := s.waitTerminal(t, runID)
	requireFannedOut(t, evs, 25)
	snap, err := events.Project(runID, evs)
	require.NoError(t, err)
	require.JSONEq(t, `25`, string(snap.Output))
}

// The engine dies mid-fan-out, before a round's commit once the log is
// long enough to hold running elements, and after a commit; a fresh
// engine finishes the run with no element lost and none completed twice.
func TestForEachCrashMidFanOut(t *testing.T) {
	t.Parallel()
	for _, crash := range []string{"before-commit-past:20", "after-commit:6"} {
		t.Run(crash, func(t *testing.T) {
			t.Parallel()
			s := newStack(t)
			rawWorker(t, s.js, "default", echo)
			runID := s.start(t, parsePlan(t, forEachPlan(t, 30)))
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childDBEnv+"="+s.db.URL, childNATSEnv+"="+s.nats.URL(), childCrashEnv+"="+crash)
			out, err := cmd.CombinedOutput()
			var exitErr *exec.ExitError
			require.ErrorAs(t, err, &exitErr, "child output:\n%s", out)
			require.Equal(t, childExit, exitErr.ExitCode(), "the engine died at %s; output:\n%s", crash, out)

			evs, err := s.log.EventsFetchAfter(t.Context(), runID, 0, 0)
			require.NoError(t, err)
			require.Empty(t, terminal(evs), "the crash came mid-run")
			s.runEngine(t, crashConfig)
			requireFannedOut(t, s.waitTerminal(t, runID), 30)
		})
	}
}
