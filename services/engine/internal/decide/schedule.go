package decide

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

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
	if ps.ForEach != "" {
		d.scheduleForEach(ps, attempt)
		return
	}
	if ps.EffectiveKind() == plan.KindSubPlan {
		d.scheduleSubRun(ps, attempt)
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
	d.armScheduleToStart(ps, attempt)
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
