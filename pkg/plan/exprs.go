package plan

import (
	"bytes"
	"fmt"

	"github.com/weftrun/weft/pkg/plan/expr"
)

// SchemaVersionExpressions is the first plan schema version whose step
// inputs may hold expressions ("${{ EXPR }}", package expr). In a plan of
// an earlier version such strings are plain text, as they always were, so
// a plan stored before expressions existed reads as it did then.
const SchemaVersionExpressions = 2

// ConditionFalse is the reason of the StepSkipped of a step whose If
// was false.
const ConditionFalse = "CONDITION_FALSE"

// hasExpressions reports whether step s's input holds an expression
// opener, read as text (under any schema version).
func (s *Step) hasExpressions() bool {
	k := s.EffectiveKind()
	return (k == KindActivity || k == KindSubPlan) && bytes.Contains(s.Input, []byte(expr.Open))
}

// needsExpressions reports whether s uses what schema version 2 brought.
func (s *Step) needsExpressions() bool {
	return s.hasExpressions() || s.If != "" || s.RunIf != "" || len(s.Handles) > 0 || s.ForEach != "" || s.hasTimeouts()
}

// scope is what step id's input, If and ForEach may refer to; inputs of
// a ForEach step see item and index too.
func (p *Plan) scope(id string, input bool) expr.Scope {
	s, _ := p.Step(id)
	return expr.Scope{Ancestors: p.Ancestors(id), ForEach: input && s != nil && s.ForEach != "", InputTypes: p.inputTypes()}
}

// outputScope is what p's Output may refer to.
func (p *Plan) outputScope() expr.Scope {
	return expr.Scope{Ancestors: p.TopoOrder(), InputTypes: p.inputTypes()}
}

// Expressive reports whether p's step inputs are read as templates: p's
// schema version, or the one ApplyDefaults would give it, is
// SchemaVersionExpressions or later.
func (p *Plan) Expressive() bool {
	v := p.SchemaVersion
	if v == 0 {
		v = p.schemaVersionFor()
	}
	return v >= SchemaVersionExpressions
}

// schemaVersionFor returns the version ApplyDefaults gives a plan that
// does not state one: the first version with what it uses.
func (p *Plan) schemaVersionFor() int {
	if len(p.Concurrency) > 0 || p.Fairness != nil {
		return SchemaVersionFlowControl
	}
	if p.UsesSubPlans() {
		return SchemaVersionSubPlans
	}
	if len(compactInput(p.InputSchema)) > 0 {
		return SchemaVersionInputSchema
	}
	if p.Output != "" || p.RunTimeout != 0 {
		return SchemaVersionExpressions
	}
	for i := range p.Steps {
		if p.Steps[i].needsExpressions() {
			return SchemaVersionExpressions
		}
	}
	return 1
}

// InputTemplate compiles the input of step id for evaluation. It returns
// nil, and no error, when the step's input holds no expression or p is
// not Expressive. An error means the plan did not pass Validate.
func (p *Plan) InputTemplate(id string, lim expr.Limits) (*expr.Template, error) {
	s, ok := p.Step(id)
	if !ok || !p.Expressive() || !s.hasExpressions() {
		return nil, nil
	}
	t, problems := expr.Compile(s.Input, "input", p.scope(id, true), lim)
	if len(problems) > 0 {
		return nil, fmt.Errorf("plan: step %s: %s", quote(id), problems[0])
	}
	return t, nil
}

// Condition compiles the If of step id. It returns nil, and no error,
// when the step has none. An error means the plan did not pass Validate.
func (p *Plan) Condition(id string, lim expr.Limits) (*expr.Condition, error) {
	s, ok := p.Step(id)
	if !ok || s.If == "" {
		return nil, nil
	}
	c, problems := expr.CompileCondition(s.If, "if", p.scope(id, false), lim)
	if len(problems) > 0 {
		return nil, fmt.Errorf("plan: step %s: %s", quote(id), problems[0])
	}
	return c, nil
}

// OutputValue compiles p's Output. It returns nil, and no error, when p
// has none. An error means the plan did not pass Validate.
func (p *Plan) OutputValue(lim expr.Limits) (*expr.Value, error) {
	if p.Output == "" {
		return nil, nil
	}
	v, problems := expr.CompileValue(p.Output, "output", p.outputScope(), lim)
	if len(problems) > 0 {
		return nil, fmt.Errorf("plan: %s", problems[0])
	}
	return v, nil
}

// expressions checks the plan's expressions (each step's input and If,
// and the plan's Output), for a plan whose dependencies are sound (no
// cycle), and adds their problems.
func (p *Plan) expressions(ps *problems, l Limits) {
	lim := expr.Limits{MaxExpressionBytes: l.MaxExpressionBytes}
	switch {
	case p.Output != "" && !p.Expressive():
		ps.add("", "output", CodeFieldNotAllowed, "an output needs schemaVersion %d", SchemaVersionExpressions)
	case p.Output != "":
		_, found := expr.CompileValue(p.Output, "output", p.outputScope(), lim)
		addExpressionProblems(ps, "", found)
	}
	for i := range p.Steps {
		s := &p.Steps[i]
		if !p.Expressive() {
			if s.If != "" {
				ps.add(s.ID, "if", CodeFieldNotAllowed, "a condition needs schemaVersion %d", SchemaVersionExpressions)
			}
			continue
		}
		var found []expr.Problem
		if s.hasExpressions() {
			_, found = expr.Compile(s.Input, "input", p.scope(s.ID, true), lim)
		}
		if s.If != "" {
			_, more := expr.CompileCondition(s.If, "if", p.scope(s.ID, false), lim)
			found = append(found, more...)
		}
		if s.ForEach != "" && s.EffectiveKind() != KindWaitSignal {
			l, more := expr.CompileList(s.ForEach, "forEach", p.scope(s.ID, false), lim)
			found = append(found, more...)
			constantList(ps, s.ID, l)
		}
		addExpressionProblems(ps, s.ID, found)
	}
}

// addExpressionProblems adds found, the problems of step stepID's (or the
// plan's) expressions, each message led by its column.
func addExpressionProblems(ps *problems, stepID string, found []expr.Problem) {
	for _, f := range found {
		msg := f.Message
		if f.Column > 0 {
			msg = fmt.Sprintf("column %d: %s", f.Column, f.Message)
		}
		ps.add(stepID, f.Path, CodeInvalidExpression, "%s", msg)
	}
}
