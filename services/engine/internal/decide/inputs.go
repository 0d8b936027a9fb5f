package decide

import (
	"encoding/json"
	"fmt"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/plan/expr"
)

// inputOf returns the input attempt of activity step ps is dispatched
// with. It is the plan's input, unless that holds expressions: then it is
// the input the attempt's StepScheduled recorded, or, for an attempt not
// yet scheduled, what the expressions resolve to now, from the run's input
// and the results of the step's ancestors in the state (resolved is true:
// the caller records it). A failure is the step's EXPRESSION_ERROR.
func (d *decider) inputOf(ps *plan.Step) (input json.RawMessage, resolved bool, failure *events.StepError) {
	st, _ := d.s.stepState(ps.ID)
	if st.Scheduled && st.Input != "" {
		return json.RawMessage(st.Input), false, nil
	}
	id, index := d.origin(ps.ID)
	tpl, err := d.p.InputTemplate(id, expr.Limits{})
	if err != nil {
		return nil, false, expressionError(err)
	}
	if !tpl.HasExpressions() {
		return ps.Input, false, nil
	}
	vars := d.vars(id)
	if index >= 0 {
		vars.Item, vars.Index = json.RawMessage(d.s.Fans[id].Items[index]), index
	}
	out, err := tpl.Eval(vars)
	input, failure = bounded(out, err, "the resolved input", plan.DefaultMaxStepInputBytes)
	return input, failure == nil, failure
}

// condition evaluates step ps's If: run is false when the step is to be
// skipped. A failure is the step's EXPRESSION_ERROR.
func (d *decider) condition(ps *plan.Step) (run bool, failure *events.StepError) {
	c, err := d.p.Condition(ps.ID, expr.Limits{})
	if err != nil {
		return false, expressionError(err)
	}
	if c == nil {
		return true, nil
	}
	ok, err := c.Eval(d.vars(ps.ID))
	if err != nil {
		return false, expressionError(err)
	}
	return ok, nil
}

// output evaluates the plan's output over every step: nil without one. A
// failure is the run's EXPRESSION_ERROR.
func (d *decider) output() (json.RawMessage, *events.StepError) {
	v, err := d.p.OutputValue(expr.Limits{})
	if err != nil {
		return nil, expressionError(err)
	}
	if v == nil {
		return nil, nil
	}
	out, err := v.Eval(d.varsOf(d.order))
	return bounded(out, err, "the output", plan.DefaultMaxRunOutputBytes)
}

// bounded returns out, the JSON document an evaluation gave, or the
// EXPRESSION_ERROR of the evaluation's err or of a document, called what,
// over limit bytes.
func bounded(out json.RawMessage, err error, what string, limit int) (json.RawMessage, *events.StepError) {
	switch {
	case err != nil:
		return nil, expressionError(err)
	case len(out) > limit:
		return nil, expressionError(fmt.Errorf("%s is %d bytes of JSON, over the limit of %d", what, len(out), limit))
	}
	return out, nil
}

// vars returns what the expressions of step id read: the run, its input,
// and the step's ancestors.
func (d *decider) vars(id string) expr.Vars { return d.varsOf(d.p.Ancestors(id)) }

// varsOf returns what an expression reads that may read the steps of ids.
func (d *decider) varsOf(ancestors []string) expr.Vars {
	v := expr.Vars{
		Input: json.RawMessage(d.s.Run.Input),
		Steps: make(map[string]expr.StepVars, len(ancestors)),
		Run: expr.RunVars{ID: d.s.RunID, PlanID: d.s.Run.PlanID, PlanVersion: d.p.PlanVersion,
			TenantID: d.s.Run.TenantID, ProjectID: d.s.Run.ProjectID, EnvironmentID: d.s.Run.EnvironmentID},
	}
	for _, a := range ancestors {
		st := d.s.Steps[a]
		v.Steps[a] = expr.StepVars{Status: string(st.Status), Completed: st.Status == events.StepStatusSuccess,
			Output: json.RawMessage(st.Output), Artifacts: json.RawMessage(st.Artifacts)}
	}
	return v
}

// expressionError is the step error of a failed evaluation: not retried,
// since the same values give the same failure.
func expressionError(err error) *events.StepError {
	return &events.StepError{Code: CodeExpressionError, Message: err.Error(), Retryable: false, Category: "USER"}
}
