package decide

import (
	"slices"
	"sync"

	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/plan/expr"
)

// Prepared is a plan made ready for deciding: what a decision reads of its
// plan that depends on the plan alone (its steps in topological order,
// each step's ancestors and dependants, and its expressions compiled with
// the default limits) is worked out once, when a decision first needs it,
// for every later decision of every run of the plan. Its methods shadow
// the plan's of the same names and return what they return. It embeds the
// plan, which it never modifies; the lists it returns are shared and must
// not be modified. Safe for concurrent use. Prepared.Decide(s, in) is
// Decide(p, s, in).
type Prepared struct {
	*plan.Plan
	order  func() []string
	output func() (*expr.Value, error)
	steps  map[string]*preparedStep // nil: nothing is kept (Decide's own, for one call)
}

// preparedStep is what Prepared keeps of one step of the plan.
type preparedStep struct {
	ancestors, dependants func() []string
	input                 func() (*expr.Template, error)
	condition             func() (*expr.Condition, error)
	forEach               func() (*expr.List, error)
}

// Prepare returns p prepared. p must not change afterwards.
func Prepare(p *plan.Plan) *Prepared {
	pp := &Prepared{Plan: p, steps: make(map[string]*preparedStep, len(p.Steps)),
		order:  sync.OnceValue(func() []string { return slices.Clip(p.TopoOrder()) }),
		output: sync.OnceValues(func() (*expr.Value, error) { return p.OutputValue(expr.Limits{}) }),
	}
	for i := range p.Steps {
		id := p.Steps[i].ID
		pp.steps[id] = &preparedStep{
			ancestors:  sync.OnceValue(func() []string { return slices.Clip(p.Ancestors(id)) }),
			dependants: sync.OnceValue(func() []string { return slices.Clip(p.Dependants(id)) }),
			input:      sync.OnceValues(func() (*expr.Template, error) { return p.InputTemplate(id, expr.Limits{}) }),
			condition:  sync.OnceValues(func() (*expr.Condition, error) { return p.Condition(id, expr.Limits{}) }),
			forEach:    sync.OnceValues(func() (*expr.List, error) { return p.ForEachList(id, expr.Limits{}) }),
		}
	}
	return pp
}

// Decide is Decide(pp.Plan, s, in).
func (pp *Prepared) Decide(s State, in Input) Decision {
	d, _ := decideWith(pp, s, in)
	return d
}

// After is After(pp.Plan, s, d, ins...).
func (pp *Prepared) After(s State, d Decision, ins ...Input) Decision {
	return afterWith(pp, s, d, ins...)
}

// step returns what pp keeps of step id, nil if nothing.
func (pp *Prepared) step(id string) *preparedStep {
	if pp.steps == nil {
		return nil
	}
	return pp.steps[id]
}

// TopoOrder is plan.Plan.TopoOrder.
func (pp *Prepared) TopoOrder() []string {
	if pp.order == nil {
		return pp.Plan.TopoOrder()
	}
	return pp.order()
}

// Ancestors is plan.Plan.Ancestors.
func (pp *Prepared) Ancestors(id string) []string {
	if st := pp.step(id); st != nil {
		return st.ancestors()
	}
	return pp.Plan.Ancestors(id)
}

// Dependants is plan.Plan.Dependants.
func (pp *Prepared) Dependants(id string) []string {
	if st := pp.step(id); st != nil {
		return st.dependants()
	}
	return pp.Plan.Dependants(id)
}

// InputTemplate is plan.Plan.InputTemplate.
func (pp *Prepared) InputTemplate(id string, lim expr.Limits) (*expr.Template, error) {
	if st := pp.step(id); st != nil && lim == (expr.Limits{}) {
		return st.input()
	}
	return pp.Plan.InputTemplate(id, lim)
}

// Condition is plan.Plan.Condition.
func (pp *Prepared) Condition(id string, lim expr.Limits) (*expr.Condition, error) {
	if st := pp.step(id); st != nil && lim == (expr.Limits{}) {
		return st.condition()
	}
	return pp.Plan.Condition(id, lim)
}

// ForEachList is plan.Plan.ForEachList.
func (pp *Prepared) ForEachList(id string, lim expr.Limits) (*expr.List, error) {
	if st := pp.step(id); st != nil && lim == (expr.Limits{}) {
		return st.forEach()
	}
	return pp.Plan.ForEachList(id, lim)
}

// OutputValue is plan.Plan.OutputValue.
func (pp *Prepared) OutputValue(lim expr.Limits) (*expr.Value, error) {
	if pp.output != nil && lim == (expr.Limits{}) {
		return pp.output()
	}
	return pp.Plan.OutputValue(lim)
}
