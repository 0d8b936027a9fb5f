package decide

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// dispatch schedules, in topological order, every step of a RUNNING run
// that its dependencies' outcomes let run (plan.Step.RunIf), and skips the
// steps they never will. Nothing is dispatched while the run is PAUSED or
// before a DELAY start's time. While a failure no step handles stands
// (blockingFailure), only allDone and anyFailed steps are dispatched: the
// run is failing, and only its cleanup and compensation run.
func (d *decider) dispatch() {
	if d.s.Status != events.RunStatusRunning || d.now.Before(d.s.DelayedUntil) {
		return
	}
	blocked := d.blockingFailure() != ""
	for _, id := range d.order {
		ps, ok := d.p.Step(id)
		if ok && ps.ForEach != "" && d.s.Steps[id].InFlight() {
			d.fanOut(ps) // a forEach step in flight runs to its end
			continue
		}
		if !ok || !d.open(id) {
			continue
		}
		if blocked && ps.EffectiveRunIf() == plan.RunIfAllSucceeded {
			continue
		}
		switch verdict, why := d.verdict(ps); verdict {
		case runNow:
			if !d.now.Before(d.s.Steps[id].RetryAt) {
				d.schedule(id)
				if d.s.Steps[id].Status == events.StepStatusFailed { // its input or condition could not be evaluated
					blocked = d.blockingFailure() != ""
				}
			}
		case skipNow:
			d.emit(id, d.s.Steps[id].Attempt, events.StepSkipped, why, "")
		default: // wait for the dependencies
		}
	}
}

// open reports whether step id is PENDING and not yet scheduled in its
// attempt.
func (d *decider) open(id string) bool {
	st := d.s.Steps[id]
	return st.Status == events.StepStatusPending && !st.Scheduled
}

// The verdicts on an open step.
const (
	waitFor = iota
	runNow
	skipNow
)

// verdict says what the outcomes of step ps's dependencies make of it, and
// for a skip the StepSkipped payload:
//   - allSucceeded: run once all succeeded; skipped with a dependency that
//     was skipped (a condition's skip, so the payload names the condition);
//     one that failed leaves it to failStep, which skipped it already.
//   - allDone: run once all ended.
//   - anyFailed: once all ended, run if one failed, else skipped (a
//     condition of its own).
func (d *decider) verdict(ps *plan.Step) (int, stepSkippedData) {
	ended, failed, skipped := true, false, ""
	for _, dep := range ps.DependsOn {
		switch st := d.s.Steps[dep]; st.Status {
		case events.StepStatusSuccess:
		case events.StepStatusFailed:
			failed = true
		case events.StepStatusSkipped:
			skipped = cmp.Or(skipped, dep)
		default:
			ended = false
		}
	}
	switch ps.EffectiveRunIf() {
	case plan.RunIfAllDone:
		return verdictIf(ended, runNow), stepSkippedData{}
	case plan.RunIfAnyFailed:
		if !ended {
			return waitFor, stepSkippedData{}
		}
		if failed {
			return runNow, stepSkippedData{}
		}
		return skipNow, stepSkippedData{StepSkippedData: events.StepSkippedData{Reason: "no dependency failed"}, Condition: ps.ID}
	default:
		if skipped != "" {
			return skipNow, stepSkippedData{StepSkippedData: events.StepSkippedData{Reason: fmt.Sprintf("dependency %q was skipped", skipped)},
				Condition: d.s.Steps[skipped].SkippedByCondition}
		}
		return verdictIf(ended && !failed, runNow), stepSkippedData{}
	}
}

func verdictIf(ok bool, v int) int {
	if ok {
		return v
	}
	return waitFor
}

// failStep fails a step for good and skips the steps after it that only
// run after their dependencies succeeded, transitively, then settles the
// run. allDone and anyFailed steps are left to dispatch.
func (d *decider) failStep(id string, attempt int, e events.StepError, engine string) {
	d.emit(id, attempt, events.StepFailed, events.StepFailedData{Error: e}, engine)
	if _, ok := d.p.Step(id); !ok { // an element of a forEach step: fanOut decides
		d.dispatch()
		d.settle()
		return
	}
	reason := fmt.Sprintf("dependency %q failed", id)
	for _, dep := range d.p.Dependants(id) {
		ps, _ := d.p.Step(dep)
		if d.open(dep) && ps.EffectiveRunIf() == plan.RunIfAllSucceeded && d.afterFailure(ps) {
			d.emit(dep, d.s.Steps[dep].Attempt, events.StepSkipped, events.StepSkippedData{Reason: reason}, "")
		}
	}
	d.dispatch()
	d.settle()
}

// afterFailure reports whether a dependency of ps failed, or was skipped
// by a failure.
func (d *decider) afterFailure(ps *plan.Step) bool {
	return slices.ContainsFunc(ps.DependsOn, func(dep string) bool {
		st := d.s.Steps[dep]
		return st.Status == events.StepStatusFailed || st.Status == events.StepStatusSkipped && st.SkippedByCondition == ""
	})
}

// blockingFailure returns the first FAILED step, in topological order,
// that no step handles: one listed in the Handles of an anyFailed step
// that has not failed or been skipped is handled, or being handled. ""
// when there is none. A subPlan step whose child was cancelled
// (CodeChildRunCancelled) comes after every other such failure: a failing
// run cancels its children in flight, and the failure that set it
// failing, not the steps of the children it cancelled, is the one its
// RunFailed names.
func (d *decider) blockingFailure() string {
	cancelled := ""
	for _, id := range d.order {
		st := d.s.Steps[id]
		switch {
		case st.Status != events.StepStatusFailed || d.handled(id):
		case st.Error.Code != CodeChildRunCancelled:
			return id
		case cancelled == "":
			cancelled = id
		}
	}
	return cancelled
}

// handled reports whether a step that handles id's failure has not failed
// or been skipped.
func (d *decider) handled(id string) bool {
	for i := range d.p.Steps {
		h := &d.p.Steps[i]
		if h.EffectiveRunIf() != plan.RunIfAnyFailed || !slices.Contains(h.Handles, id) {
			continue
		}
		if st := d.s.Steps[h.ID].Status; st != events.StepStatusFailed && st != events.StepStatusSkipped {
			return true
		}
	}
	return false
}

// settle ends a RUNNING run with nothing in flight: RunCompleted when
// every step succeeded, was skipped, or failed and was handled; RunFailed
// when a failure no step handles stands (failRun). Otherwise (steps in
// flight, retries waiting on their timers, or a PAUSED run) it does
// nothing.
func (d *decider) settle() {
	if d.s.Status != events.RunStatusRunning {
		return
	}
	all := true
	for _, id := range d.order {
		st := d.s.Steps[id]
		if st.InFlight() {
			return
		}
		all = all && st.Status.Terminal()
	}
	if failed := d.blockingFailure(); failed != "" {
		d.failRun(failed)
	} else if all {
		d.complete()
	}
}

// failRun fails the run, naming the step that failed it: it skips the
// steps that will not run now (every open allSucceeded step), dispatches
// the cleanup and compensation steps that lets run, and, when none runs,
// skips whatever is left and ends the run FAILED.
func (d *decider) failRun(failed string) {
	reason := fmt.Sprintf("run failed: step %q failed", failed)
	skipOpen := func(onlyAllSucceeded bool) {
		for _, id := range d.order {
			ps, _ := d.p.Step(id)
			if d.open(id) && (!onlyAllSucceeded || ps.EffectiveRunIf() == plan.RunIfAllSucceeded) {
				d.emit(id, d.s.Steps[id].Attempt, events.StepSkipped, events.StepSkippedData{Reason: reason}, "")
			}
		}
	}
	skipOpen(true)
	d.dispatch()
	for _, id := range d.order {
		if d.s.Steps[id].InFlight() || d.s.Status != events.RunStatusRunning {
			return
		}
	}
	skipOpen(false)
	cause := d.s.Steps[failed].Error
	d.emit("", d.s.Failures+1, events.RunFailed, events.RunFailedData{
		Reason: fmt.Sprintf("step %q failed: %s", failed, cause.Code), StepID: failed, Error: &cause,
	}, "")
}
