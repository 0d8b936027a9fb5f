package plan

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

// subStep returns a subPlan step running an inline plan of one activity.
func subStep(id string) Step {
	return Step{ID: id, Kind: KindSubPlan, Plan: planWith(step("work"))}
}

// nestedPlans returns a plan whose inline subPlan plans nest depth levels.
func nestedPlans(depth int) *Plan {
	p := planWith(step("leaf"))
	for range depth {
		p = planWith(Step{ID: "down", Kind: KindSubPlan, Plan: p})
	}
	return p
}

// A subPlan step by planRef or inline validates, takes schema version 4
// and parentClose cancel by default, and keeps its retry policy unset.
func TestSubPlanStepValidates(t *testing.T) {
	t.Parallel()
	byRef := planWith(Step{ID: "pay", Kind: KindSubPlan, PlanRef: &Ref{PlanID: "charge", PlanVersion: LatestVersion},
		Input: json.RawMessage(`{"amount":"${{ input.amount }}"}`)})
	v, err := byRef.Validated(Limits{})
	require.NoError(t, err)
	require.Equal(t, SchemaVersionSubPlans, byRef.SchemaVersion)
	require.Equal(t, ParentCloseCancel, byRef.Steps[0].ParentClose)
	require.Nil(t, byRef.Steps[0].Retry, "a child is not retried unless the step says so")
	require.Contains(t, string(v.JSON()), `"planRef":{"planId":"charge","planVersion":"latest"}`)

	inline := planWith(subStep("pay"), step("after", "pay"))
	require.NoError(t, inline.Validate(Limits{}))
	inline.ApplyDefaults()
	require.Equal(t, KindActivity, inline.Steps[0].Plan.Steps[0].Kind, "the inline plan gets its own defaults")
}

// Each way a subPlan step can be wrong is refused with its own problem,
// at its field; an inline plan's problems are told at their path in it.
func TestSubPlanStepProblems(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		step        Step
		code, field string
	}{
		"neither":       {Step{ID: "s", Kind: KindSubPlan}, CodeMissingField, "planRef"},
		"both":          {Step{ID: "s", Kind: KindSubPlan, PlanRef: &Ref{PlanID: "c", PlanVersion: "1"}, Plan: planWith(step("a"))}, CodeFieldNotAllowed, "plan"},
		"no ref id":     {Step{ID: "s", Kind: KindSubPlan, PlanRef: &Ref{PlanVersion: "1"}}, CodeMissingField, "planRef.planId"},
		"no version":    {Step{ID: "s", Kind: KindSubPlan, PlanRef: &Ref{PlanID: "c"}}, CodeMissingField, "planRef.planVersion"},
		"bad version":   {Step{ID: "s", Kind: KindSubPlan, PlanRef: &Ref{PlanID: "c", PlanVersion: "a.b"}}, CodeInvalidID, "planRef.planVersion"},
		"bad policy":    {Step{ID: "s", Kind: KindSubPlan, Plan: planWith(step("a")), ParentClose: "detach"}, CodeInvalidParentClose, "parentClose"},
		"activity":      {Step{ID: "s", Kind: KindSubPlan, Plan: planWith(step("a")), Activity: "echo"}, CodeFieldNotAllowed, "activity"},
		"queue":         {Step{ID: "s", Kind: KindSubPlan, Plan: planWith(step("a")), Queue: "q"}, CodeFieldNotAllowed, "queue"},
		"timeout":       {Step{ID: "s", Kind: KindSubPlan, Plan: planWith(step("a")), Timeout: Duration(1)}, CodeFieldNotAllowed, "timeout"},
		"inline broken": {Step{ID: "s", Kind: KindSubPlan, Plan: planWith(Step{ID: "a"})}, CodeMissingField, "plan.steps[id=a].activity"},
		"ref elsewhere": {Step{ID: "s", Activity: "echo", PlanRef: &Ref{PlanID: "c", PlanVersion: "1"}}, CodeFieldNotAllowed, "planRef"},
		"policy elsewhere": {Step{ID: "s", Kind: KindWaitSignal, Signal: "go", ParentClose: ParentCloseAbandon},
			CodeFieldNotAllowed, "parentClose"},
		"bad label": {Step{ID: "s", Kind: KindSubPlan, Plan: planWith(step("a")), Labels: map[string]string{"Team": "a"}},
			CodeInvalidLabels, "labels.Team"},
		"labels elsewhere": {Step{ID: "s", Activity: "echo", Labels: map[string]string{"team": "a"}}, CodeFieldNotAllowed, "labels"},
	} {
		p := planWith(tc.step)
		got := requireOnly(t, p.Validate(Limits{}), tc.code)
		require.Equal(t, tc.field, got.Field, name)
		require.Equal(t, "s", got.StepID, name)
	}
	old := planWith(subStep("s"))
	old.SchemaVersion = SchemaVersionInputSchema
	got := requireOnly(t, old.Validate(Limits{}), CodeFieldNotAllowed)
	require.Contains(t, got.Message, fmt.Sprintf("schemaVersion %d", SchemaVersionSubPlans))
}

// Inline plans may nest MaxRunDepth levels of child runs, and no more.
func TestSubPlanDepthLimit(t *testing.T) {
	t.Parallel()
	require.NoError(t, nestedPlans(DefaultMaxRunDepth).Validate(Limits{}))
	got := requireOnly(t, nestedPlans(DefaultMaxRunDepth+1).Validate(Limits{}), CodeRunTooDeep)
	require.Contains(t, got.Message, fmt.Sprintf("depth %d, more than the limit of %d", DefaultMaxRunDepth+1, DefaultMaxRunDepth))
	require.Equal(t, "plan"+strings.Repeat(".steps[id=down].plan", DefaultMaxRunDepth), got.Field)

	require.NoError(t, nestedPlans(2).Validate(Limits{MaxRunDepth: 2}))
	requireOnly(t, nestedPlans(3).Validate(Limits{MaxRunDepth: 2}), CodeRunTooDeep)
}

// TestPersistedGoldenPlanSubPlan: a plan with subPlan steps, by ref and
// inline, is written byte for byte as testdata/persisted/Plan_subPlan.json
// holds it and read back to every field (docs/persisted-format.md).
func TestPersistedGoldenPlanSubPlan(t *testing.T) {
	t.Parallel()
	p := planWith(Step{ID: "pay", Kind: KindSubPlan, PlanRef: &Ref{PlanID: "charge", PlanVersion: "3"},
		Input: json.RawMessage(`{"amount":5}`), ParentClose: ParentCloseAbandon},
		Step{ID: "audit", Kind: KindSubPlan, Plan: planWith(step("log")), DependsOn: []string{"pay"}})
	p.ApplyDefaults()
	goldentest.CheckAll(t, filepath.Join("testdata", "persisted"), []goldentest.Record{
		goldentest.JSON("Plan_subPlan", func(testing.TB) Plan { return *p }, *p, nil),
	})
}
