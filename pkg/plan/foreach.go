package plan

import (
	"fmt"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan/expr"
)

// The bounds of a forEach step.
const (
	// DefaultMaxParallel is how many elements of a forEach step run at
	// once when its maxParallel is zero.
	DefaultMaxParallel = 10
	// MaxParallelLimit bounds a forEach step's maxParallel.
	MaxParallelLimit = 1000
	// MaxForEachElements bounds the list a forEach step's expression
	// yields; a longer list fails the step (EXPRESSION_ERROR) before any
	// element runs.
	MaxForEachElements = 10_000
	// MaxForEachBytes bounds the JSON of a forEach step's list, recorded
	// on its StepScheduled, and of its output, the list of its elements'
	// outputs; a larger one fails the step (EXPRESSION_ERROR).
	MaxForEachBytes = 1 << 20 // 1 MiB
)

// EffectiveMaxParallel returns s.MaxParallel, or DefaultMaxParallel when
// it is zero.
func (s *Step) EffectiveMaxParallel() int {
	if s.MaxParallel <= 0 {
		return DefaultMaxParallel
	}
	return s.MaxParallel
}

// EffectiveFailFast returns s.FailFast, true when it is nil.
func (s *Step) EffectiveFailFast() bool { return s.FailFast == nil || *s.FailFast }

// ForEachList compiles the ForEach of step id. It returns nil, and no
// error, when the step has none. An error means the plan did not pass
// Validate.
func (p *Plan) ForEachList(id string, lim expr.Limits) (*expr.List, error) {
	s, ok := p.Step(id)
	if !ok || s.ForEach == "" {
		return nil, nil
	}
	l, problems := expr.CompileList(s.ForEach, "forEach", p.scope(id, false), lim)
	if len(problems) > 0 {
		return nil, fmt.Errorf("plan: step %s: %s", quote(id), problems[0])
	}
	return l, nil
}

// forEaches checks every step's ForEach, MaxParallel and FailFast (the
// expression itself is checked with the others), and that no step id is
// the id of an element of a forEach step (events.ChildStepID), which
// would mix the two steps' events.
func (p *Plan) forEaches(ps *problems) {
	loops := map[string]bool{}
	for i := range p.Steps {
		s := &p.Steps[i]
		switch {
		case s.ForEach == "" && (s.MaxParallel != 0 || s.FailFast != nil):
			ps.add(s.ID, "forEach", CodeInvalidForEach, "maxParallel and failFast need forEach")
		case s.ForEach == "":
			continue
		case !p.Expressive():
			ps.add(s.ID, "forEach", CodeFieldNotAllowed, "forEach needs schemaVersion %d", SchemaVersionExpressions)
		case s.EffectiveKind() != KindActivity && s.EffectiveKind() != KindSubPlan:
			ps.add(s.ID, "forEach", CodeInvalidForEach, "only an activity or subPlan step loops over a list")
		case s.MaxParallel < 0 || s.MaxParallel > MaxParallelLimit:
			ps.add(s.ID, "maxParallel", CodeInvalidForEach, "%d is out of range; want 1 to %d (0: %d)",
				s.MaxParallel, MaxParallelLimit, DefaultMaxParallel)
		}
		loops[s.ID] = true
	}
	if len(loops) == 0 {
		return
	}
	for i := range p.Steps {
		id := p.Steps[i].ID
		if parent, _, ok := events.ParseChildStepID(id); ok && loops[parent] {
			ps.add(id, "id", CodeInvalidForEach, "%s is the id of an element of forEach step %s", quote(id), quote(parent))
		}
	}
}
