package plan

import "slices"

// RunIf says which outcomes of its dependencies a step runs after.
type RunIf string

// The RunIf values.
const (
	// RunIfAllSucceeded runs the step once every dependency succeeded; a
	// dependency that failed or was skipped skips it. The default.
	RunIfAllSucceeded RunIf = "allSucceeded"
	// RunIfAllDone runs the step once every dependency has ended, however
	// it ended: a cleanup step. It runs even after another step failed
	// the run.
	RunIfAllDone RunIf = "allDone"
	// RunIfAnyFailed runs the step once every dependency has ended and at
	// least one failed: a compensation or on-failure step. When none
	// failed, it is skipped. With Handles, its success keeps the failures
	// it handles from failing the run.
	RunIfAnyFailed RunIf = "anyFailed"
)

// EffectiveRunIf returns s.RunIf, or RunIfAllSucceeded when it is empty.
func (s *Step) EffectiveRunIf() RunIf {
	if s.RunIf == "" {
		return RunIfAllSucceeded
	}
	return s.RunIf
}

// runIfs checks every step's RunIf and Handles, for a plan whose
// dependencies are sound, and adds their problems.
func (p *Plan) runIfs(ps *problems) {
	for i := range p.Steps {
		s := &p.Steps[i]
		if (s.RunIf != "" || len(s.Handles) > 0) && !p.Expressive() {
			ps.add(s.ID, "runIf", CodeFieldNotAllowed, "runIf and handles need schemaVersion %d", SchemaVersionExpressions)
			continue
		}
		switch s.RunIf {
		case "", RunIfAllSucceeded, RunIfAllDone, RunIfAnyFailed:
		default:
			ps.add(s.ID, "runIf", CodeInvalidRunIf, "unknown runIf %s; want %q, %q or %q",
				quote(string(s.RunIf)), RunIfAllSucceeded, RunIfAllDone, RunIfAnyFailed)
		}
		if len(s.Handles) > 0 && s.RunIf != RunIfAnyFailed {
			ps.add(s.ID, "handles", CodeFieldNotAllowed, "only a step with runIf %q handles failures", RunIfAnyFailed)
			continue
		}
		ancestors := p.Ancestors(s.ID)
		for _, h := range s.Handles {
			if !slices.Contains(ancestors, h) {
				ps.add(s.ID, "handles", CodeInvalidRunIf, "step %s is not a step this one depends on, directly or not", quote(h))
			}
		}
	}
}
