package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weftrun/weft/pkg/api"
)

// SchemaVersionSubPlans is the first plan schema version whose steps may
// be subPlan steps (KindSubPlan), which start child runs.
const SchemaVersionSubPlans = 4

// DefaultMaxRunDepth is how deep child runs nest by default: a run started
// by a caller is at depth 0, its children at 1, and a run at this depth
// starts no child (Limits.MaxRunDepth; the engine's limit of the same
// name fails the step that would).
const DefaultMaxRunDepth = 8

// LatestVersion is the planVersion of a Ref that names the newest version
// of its plan that is not archived, resolved when the child starts.
const LatestVersion = "latest"

// Ref names a registered plan version (docs/api.md, "Registered plans").
type Ref struct {
	PlanID      string `json:"planId"`
	PlanVersion string `json:"planVersion"`
}

// ParentClose is what becomes of a running child run when its parent is
// cancelled or fails.
type ParentClose string

// Parent-close policies.
const (
	// ParentCloseCancel cancels the child (a CANCEL signal in its log).
	ParentCloseCancel ParentClose = "cancel"
	// ParentCloseAbandon lets the child run on to its end, which the
	// parent no longer hears of.
	ParentCloseAbandon ParentClose = "abandon"
)

// EffectiveParentClose returns s.ParentClose, or ParentCloseCancel when
// it is empty.
func (s *Step) EffectiveParentClose() ParentClose {
	if s.ParentClose == "" {
		return ParentCloseCancel
	}
	return s.ParentClose
}

// applySubPlanDefaults fills in a subPlan step's defaults: its
// parent-close policy, and its inline plan's own defaults. Its retry
// policy stays nil: a child run is not retried unless the step says so.
func (s *Step) applySubPlanDefaults() {
	if s.ParentClose == "" {
		s.ParentClose = ParentCloseCancel
	}
	if s.Plan != nil {
		s.Plan.ApplyDefaults()
	}
}

// UsesSubPlans reports whether a step of p is a subPlan step.
func (p *Plan) UsesSubPlans() bool {
	for i := range p.Steps {
		if p.Steps[i].Kind == KindSubPlan {
			return true
		}
	}
	return false
}

// subPlan checks a subPlan step: its child plan, by ref or inline (and
// then validated as a plan one level deeper, within Limits.MaxRunDepth),
// its policies, and the fields only activities and waitSignal steps take.
func (v *stepValidator) subPlan() {
	s := v.step
	switch {
	case s.PlanRef == nil && s.Plan == nil:
		v.add("planRef", CodeMissingField, "a subPlan step needs planRef (a registered plan) or plan (inline)")
	case s.PlanRef != nil && s.Plan != nil:
		v.add("plan", CodeFieldNotAllowed, "a subPlan step has planRef or plan, not both")
	case s.PlanRef != nil:
		v.planRef(s.PlanRef)
	default:
		v.inlinePlan(s.Plan)
	}
	switch s.ParentClose {
	case "", ParentCloseCancel, ParentCloseAbandon:
	default:
		v.add("parentClose", CodeInvalidParentClose, "unknown policy %s; want %q or %q", quote(string(s.ParentClose)),
			ParentCloseCancel, ParentCloseAbandon)
	}
	if s.Retry != nil {
		v.retry(s.Retry)
	}
	for _, p := range api.CheckLabels(s.Labels) {
		v.add(p.Path, CodeInvalidLabels, "%s", p.Message)
	}
	v.notAllowed("a subPlan step runs a child run, not an activity", []setField{
		{"activity", s.Activity != ""},
		{"signal", s.Signal != ""},
		{"queue", s.Queue != ""},
		{"secrets", len(s.Secrets) > 0},
		{"idempotencyKey", s.IdempotencyKey != ""},
		{"timeout", s.Timeout != 0},
	})
	v.input()
}

// planRef checks a subPlan step's planRef.
func (v *stepValidator) planRef(ref *Ref) {
	if ref.PlanID == "" {
		v.add("planRef.planId", CodeMissingField, "required")
	} else if why := idProblem(ref.PlanID, v.limits.MaxIDBytes); why != "" {
		v.add("planRef.planId", CodeInvalidID, "%s", why)
	}
	if ref.PlanVersion == "" {
		v.add("planRef.planVersion", CodeMissingField, "required (a version, or %q)", LatestVersion)
	} else if why := idProblem(ref.PlanVersion, v.limits.MaxIDBytes); why != "" {
		v.add("planRef.planVersion", CodeInvalidID, "%s", why)
	}
}

// inlinePlan validates a subPlan step's inline plan one child-run level
// deeper and adds its problems under the step's field "plan".
func (v *stepValidator) inlinePlan(child *Plan) {
	depth := v.depth + 1
	if depth > v.limits.MaxRunDepth {
		v.add("plan", CodeRunTooDeep, "the child run would be at depth %d, more than the limit of %d", depth, v.limits.MaxRunDepth)
		return
	}
	_, err := child.validateAt(v.limits, depth)
	verr, ok := errors.AsType[*ValidationError](err)
	if !ok {
		return
	}
	for _, p := range verr.Problems {
		v.add(nestedField(p), p.Code, "%s", p.Message)
	}
}

// nestedField is the field, under a subPlan step, of a problem of its
// inline plan: "plan.steps[id=x].activity", or "plan.planId".
func nestedField(p Problem) string {
	var b strings.Builder
	b.WriteString("plan")
	if p.StepID != "" {
		fmt.Fprintf(&b, ".steps[id=%s]", p.StepID)
	}
	if p.Field != "" {
		b.WriteString(".")
		b.WriteString(p.Field)
	}
	return b.String()
}

// noSubPlanFields refuses, on a step that is not a subPlan step, the
// fields only subPlan steps take.
func (v *stepValidator) noSubPlanFields() {
	v.notAllowed("only a subPlan step starts a child run", []setField{
		{"planRef", v.step.PlanRef != nil},
		{"plan", v.step.Plan != nil},
		{"parentClose", v.step.ParentClose != ""},
		{"labels", len(v.step.Labels) > 0},
	})
}

// subPlanVersion refuses subPlan steps in a plan whose declared schema
// version is older than SchemaVersionSubPlans.
func (p *Plan) subPlanVersion(ps *problems) {
	if p.SchemaVersion == 0 || p.SchemaVersion >= SchemaVersionSubPlans {
		return
	}
	for i := range p.Steps {
		if p.Steps[i].Kind == KindSubPlan {
			ps.add(p.Steps[i].ID, "kind", CodeFieldNotAllowed, "a subPlan step needs schemaVersion %d", SchemaVersionSubPlans)
		}
	}
}
