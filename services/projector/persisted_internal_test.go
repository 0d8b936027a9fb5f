package projector

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

// run_snapshots.plan_steps as the projector writes it from a run's plan
// (docs/persisted-format.md), read back as the read API serves it.
func TestPersistedGoldenPlanSteps(t *testing.T) {
	plan := json.RawMessage(`{"planId": "p", "planVersion": "1", "steps": [
		{"id": "build", "activity": "echo", "input": {"x": 1}, "queue": "default"},
		{"id": "gate", "kind": "waitSignal", "signal": "approve", "dependsOn": ["build"], "timeout": "1h"},
		{"id": "ship", "activity": "echo", "dependsOn": ["gate"]}]}`)
	written, n := planGraph(plan)
	require.Equal(t, 3, n)
	golden := goldentest.Compare(t, "testdata/persisted/plan_steps.json", written)

	var steps []api.PlanStep
	require.NoError(t, json.Unmarshal(golden, &steps))
	require.Equal(t, []api.PlanStep{
		{ID: "build", Activity: "echo", DependsOn: []string{}},
		{ID: "gate", Kind: "waitSignal", Signal: "approve", DependsOn: []string{"build"}},
		{ID: "ship", Activity: "echo", DependsOn: []string{"gate"}},
	}, steps)

	var first []json.RawMessage
	require.NoError(t, json.Unmarshal(golden, &first))
	var step api.PlanStep
	require.NoError(t, json.Unmarshal(goldentest.WithUnknownField(t, first[1]), &step), "a newer writer's field is ignored")
	require.Equal(t, steps[1], step)
}
