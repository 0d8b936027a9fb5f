package plan

// This file holds the timeouts schema version 2 brought: a step's
// scheduleToStartTimeout and heartbeatTimeout, and the plan's runTimeout
// (docs/plans.md, "Timeouts"). A step's timeout, which bounds each
// attempt's run time, is older (plan.go).

// hasTimeouts reports whether s sets a timeout of schema version 2.
func (s *Step) hasTimeouts() bool {
	return s.ScheduleToStartTimeout != 0 || s.HeartbeatTimeout != 0
}

// timeouts checks the plan's and each step's version 2 timeouts, and adds
// their problems: each needs schemaVersion 2, none may be negative, and a
// step's apply to activity steps only.
func (p *Plan) timeouts(ps *problems) {
	v2 := p.Expressive()
	switch {
	case p.RunTimeout != 0 && !v2:
		ps.add("", "runTimeout", CodeFieldNotAllowed, "a runTimeout needs schemaVersion %d", SchemaVersionExpressions)
	case p.RunTimeout < 0:
		ps.add("", "runTimeout", CodeInvalidTimeout, "must not be negative")
	}
	for i := range p.Steps {
		s := &p.Steps[i]
		for _, f := range []struct {
			name string
			d    Duration
		}{
			{"scheduleToStartTimeout", s.ScheduleToStartTimeout},
			{"heartbeatTimeout", s.HeartbeatTimeout},
		} {
			switch {
			case f.d == 0:
			case !v2:
				ps.add(s.ID, f.name, CodeFieldNotAllowed, "a %s needs schemaVersion %d", f.name, SchemaVersionExpressions)
			case s.EffectiveKind() != KindActivity:
				ps.add(s.ID, f.name, CodeFieldNotAllowed, "a %s step runs no activity, so it takes no %s", s.EffectiveKind(), f.name)
			case f.d < 0:
				ps.add(s.ID, f.name, CodeInvalidTimeout, "must not be negative")
			}
		}
	}
}
