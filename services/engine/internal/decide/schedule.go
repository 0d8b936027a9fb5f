package decide

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// dispatch schedules, in topological order, every ready step of a RUNNING
// run that has no failed step. Nothing is dispatched while the run is
// PAUSED, before a DELAY start's time, or once a step has failed for good.
func (d *decider) dispatch() {
	if d.s.Status != events.RunStatusRunning || d.failedStep() != "" || d.now.Before(d.s.DelayedUntil) {
		return
	}
	for _, id := range d.order {
		switch {
		case d.ready(id):
			d.schedule(id)
		case d.afterSkipped(id) != "":
			dep := d.afterSkipped(id)
			reason := fmt.Sprintf("dependency %q was skipped", dep)
			d.emit(id, d.s.Steps[id].Attempt, events.StepSkipped,
				stepSkippedData{StepSkippedData: events.StepSkippedData{Reason: reason}, Condition: d.s.Steps[dep].SkippedByCondition}, "")
		}
	}
}

// afterSkipped returns the first dependency of step id that was skipped,
// when id has not been dispatched: a step runs only after each of its
// dependencies succeeded, so it is skipped with it. "" otherwise.
func (d *decider) afterSkipped(id string) string {
	st := d.s.Steps[id]
	ps, ok := d.p.Step(id)
	if !ok || st.Status != events.StepStatusPending || st.Scheduled {
		return ""
	}
	for _, dep := range ps.DependsOn {
		if d.s.Steps[dep].Status == events.StepStatusSkipped {
			return dep
		}
	}
	return ""
}

// ready reports whether step id may be dispatched now: PENDING, not yet
// scheduled in its attempt, past any retry time, every dependency SUCCESS.
func (d *decider) ready(id string) bool {
	st := d.s.Steps[id]
	ps, ok := d.p.Step(id)
	if !ok || st.Status != events.StepStatusPending || st.Scheduled || d.now.Before(st.RetryAt) {
		return false
	}
	for _, dep := range ps.DependsOn {
		if d.s.Steps[dep].Status != events.StepStatusSuccess {
			return false
		}
	}
	return true
}

// schedule dispatches step id's current attempt: StepScheduled and a Task
// for an activity; StepScheduled, StepStarted and a timeout timer (when the
// step has a timeout) for a waitSignal step, which waits for its signal.
func (d *decider) schedule(id string) {
	ps, _ := d.p.Step(id)
	attempt := d.s.Steps[id].Attempt
	if run, failure := d.condition(ps); failure != nil {
		d.failStep(id, attempt, *failure, "")
		return
	} else if !run {
		d.emit(id, attempt, events.StepSkipped,
			stepSkippedData{StepSkippedData: events.StepSkippedData{Reason: plan.ConditionFalse}, Condition: id}, "")
		return
	}
	if ps.EffectiveKind() == plan.KindWaitSignal {
		if d.takeBuffered(ps, attempt) {
			return
		}
		var data stepScheduledData
		if ps.Timeout > 0 {
			data.Deadline = d.now.Add(ps.Timeout.Std())
		}
		d.emit(id, attempt, events.StepScheduled, data, "")
		d.emit(id, attempt, events.StepStarted, events.StepStartedData{}, "")
		if !data.Deadline.IsZero() {
			d.setTimer(id, attempt, TimerWaitTimeout, data.Deadline)
		}
		return
	}
	input, resolved, failure := d.inputOf(ps)
	if failure != nil {
		d.failStep(id, attempt, *failure, "")
		return
	}
	data := stepScheduledData{StepScheduledData: events.StepScheduledData{Activity: ps.Activity, Queue: queueOf(ps)}}
	if resolved {
		data.Input = input
	}
	d.emit(id, attempt, events.StepScheduled, data, "")
	d.out.Tasks = append(d.out.Tasks, d.taskOf(ps, attempt, input))
}

// takeBuffered completes attempt of waitSignal step ps at once with the
// first signal buffered for it, if any: StepScheduled, StepStarted and
// StepCompleted with the signal's payload, all caused by the signal, the
// StepCompleted naming its SignalAccepted event as parent (which is how the
// state knows the signal was taken).
func (d *decider) takeBuffered(ps *plan.Step, attempt int) bool {
	i := slices.IndexFunc(d.s.Buffered, func(b SignalAccepted) bool { return b.Name == ps.Signal && b.EventID != "" })
	if i < 0 {
		return false
	}
	b := d.s.Buffered[i]
	cause := d.cause
	defer func() { d.cause = cause }()
	d.cause = b.SignalID
	d.emit(ps.ID, attempt, events.StepScheduled, stepScheduledData{}, "")
	d.emit(ps.ID, attempt, events.StepStarted, events.StepStartedData{}, "")
	e := d.spec(ps.ID, attempt, events.StepCompleted,
		events.StepCompletedData{Output: slices.Clone(b.Payload), Artifacts: []events.ArtifactRef{}}, "")
	e.ParentEventID = b.EventID
	d.record(e, attempt)
	return true
}

// taskOf is the task of attempt of activity step ps, with input.
func (d *decider) taskOf(ps *plan.Step, attempt int, input json.RawMessage) Task {
	return Task{
		RunID: d.s.RunID, PlanVersion: d.p.PlanVersion, StepID: ps.ID, LogicalAttempt: attempt,
		Activity: ps.Activity, Queue: queueOf(ps), Input: slices.Clone(input),
		Secrets: slices.Clone(ps.Secrets), IdempotencyKey: ps.IdempotencyKey, Timeout: timeoutOf(ps),
	}
}

// timeoutOf is the timeout of each attempt of activity step ps.
func timeoutOf(ps *plan.Step) time.Duration {
	if t := ps.Timeout.Std(); t > 0 {
		return t
	}
	return plan.DefaultTimeout
}

// failStep fails a step for good and skips its transitive dependants that
// have not run, then settles the run.
func (d *decider) failStep(id string, attempt int, e events.StepError, engine string) {
	d.emit(id, attempt, events.StepFailed, events.StepFailedData{Error: e}, engine)
	reason := fmt.Sprintf("dependency %q failed", id)
	for _, dep := range d.p.Dependants(id) {
		if st := d.s.Steps[dep]; st.Status == events.StepStatusPending && !st.Scheduled {
			d.emit(dep, st.Attempt, events.StepSkipped, events.StepSkippedData{Reason: reason}, "")
		}
	}
	d.settle()
}

// settle ends a RUNNING run with nothing in flight: RunCompleted when every
// step succeeded; RunFailed, after skipping the steps that never ran, when
// one failed. Otherwise (steps in flight, retries waiting on their timers,
// or a PAUSED run) it does nothing.
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
		all = all && (st.Status == events.StepStatusSuccess || st.Status == events.StepStatusSkipped)
	}
	failed := d.failedStep()
	switch {
	case failed == "" && all:
		d.complete()
	case failed != "":
		d.failRun(failed)
	}
}

// complete ends the run COMPLETED, with its plan's output, or FAILED with
// EXPRESSION_ERROR when the output cannot be evaluated.
func (d *decider) complete() {
	out, failure := d.output()
	if failure != nil {
		d.emit("", d.s.Failures+1, events.RunFailed, events.RunFailedData{
			Reason: "the run's output: " + failure.Code, Error: failure}, "")
		return
	}
	var data any
	if out != nil {
		data = events.RunCompletedData{Output: out}
	}
	d.emit("", 0, events.RunCompleted, data, "")
}

// failRun skips every step that never ran and fails the run, naming the
// step that failed it.
func (d *decider) failRun(failed string) {
	reason := fmt.Sprintf("run failed: step %q failed", failed)
	for _, id := range d.order {
		if st := d.s.Steps[id]; st.Status == events.StepStatusPending && !st.Scheduled {
			d.emit(id, st.Attempt, events.StepSkipped, events.StepSkippedData{Reason: reason}, "")
		}
	}
	cause := d.s.Steps[failed].Error
	d.emit("", d.s.Failures+1, events.RunFailed, events.RunFailedData{
		Reason: fmt.Sprintf("step %q failed: %s", failed, cause.Code), StepID: failed, Error: &cause,
	}, "")
}

// failedStep returns the first FAILED step in topological order, or "".
func (d *decider) failedStep() string {
	for _, id := range d.order {
		if d.s.Steps[id].Status == events.StepStatusFailed {
			return id
		}
	}
	return ""
}

// failedAncestor reports whether a step that id depends on, directly or
// transitively, is FAILED.
func (d *decider) failedAncestor(id string) bool {
	seen := map[string]bool{}
	stack := []string{id}
	for len(stack) > 0 {
		ps, ok := d.p.Step(stack[len(stack)-1])
		stack = stack[:len(stack)-1]
		if !ok {
			continue
		}
		for _, dep := range ps.DependsOn {
			if seen[dep] {
				continue
			}
			seen[dep] = true
			if d.s.Steps[dep].Status == events.StepStatusFailed {
				return true
			}
			stack = append(stack, dep)
		}
	}
	return false
}
