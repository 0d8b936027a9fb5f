package decide

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/plan/expr"
)

// This file runs forEach steps. A forEach step's attempt evaluates its
// list and records it on its StepScheduled (with forEach), then starts
// (StepStarted): it is in flight while its elements run. Each element is a
// child step, events.ChildStepID(step, i), with its own logical attempts,
// retries, tasks and results, as any activity step; at most maxParallel
// are started and not ended at once. The step completes with the list of
// its children's outputs once all succeeded, and fails (FOREACH_FAILED)
// at the first failed child under failFast, cancelling those running, or
// once all ended otherwise.

// CodeForEachFailed fails a forEach step one of whose elements failed.
const CodeForEachFailed = "FOREACH_FAILED"

// step returns the plan step of id: a step of the plan, or an element of a
// forEach step whose attempt is scheduled, as childStep gives it.
func (d *decider) step(id string) (*plan.Step, bool) {
	if ps, ok := d.p.Step(id); ok {
		return ps, true
	}
	parent, i, ok := events.ParseChildStepID(id)
	fan, fanned := d.s.Fans[parent]
	if !ok || !fanned || i >= len(fan.Items) {
		return nil, false
	}
	ps, _ := d.p.Step(parent)
	return childStep(ps, i), true
}

// childStep is the step element i of forEach step ps runs as: ps's
// activity, queue, timeout, retry policy and secrets under the child's id,
// with an idempotency key of its own.
func childStep(ps *plan.Step, i int) *plan.Step {
	c := *ps
	c.ID = events.ChildStepID(ps.ID, i)
	c.DependsOn, c.If, c.ForEach, c.RunIf, c.Handles = nil, "", "", "", nil
	if c.IdempotencyKey != "" {
		c.IdempotencyKey = events.ChildStepID(c.IdempotencyKey, i)
	}
	return &c
}

// origin returns the plan step whose expressions step id's input comes
// from, and the element's index for an element of a forEach step (-1
// otherwise).
func (d *decider) origin(id string) (string, int) {
	if _, ok := d.p.Step(id); ok {
		return id, -1
	}
	if parent, i, ok := events.ParseChildStepID(id); ok {
		return parent, i
	}
	return id, -1
}

// activities calls f with the plan step and state of every activity step
// of p: each step of the plan but forEach steps, whose elements it gives
// instead (those of an attempt that is scheduled, once they have an
// event).
func (s State) activities(p *plan.Plan, f func(ps *plan.Step, st StepState)) {
	for i := range p.Steps {
		ps := &p.Steps[i]
		if ps.EffectiveKind() != plan.KindActivity {
			continue
		}
		if ps.ForEach == "" {
			f(ps, s.Steps[ps.ID])
		}
	}
	s.elements(p, func(ps *plan.Step, st StepState) {
		if ps.EffectiveKind() == plan.KindActivity {
			f(ps, st)
		}
	})
}

// elements calls f with the step and state of every element of p's
// forEach steps whose attempt is scheduled, once it has had an event.
func (s State) elements(p *plan.Plan, f func(ps *plan.Step, st StepState)) {
	for i := range p.Steps {
		ps := &p.Steps[i]
		if _, fanned := s.Fans[ps.ID]; fanned {
			s.Elements[ps.ID].each(func(j int, st StepState) { f(childStep(ps, j), st) })
		}
	}
}

// scheduleForEach dispatches attempt of forEach step ps: it evaluates the
// list, records it, and starts the first elements. A list that cannot be
// evaluated, has more than plan.MaxForEachElements elements or encodes to
// more than plan.MaxForEachBytes fails the step (EXPRESSION_ERROR).
func (d *decider) scheduleForEach(ps *plan.Step, attempt int) {
	list, n, failure := d.forEachList(ps)
	if failure != nil {
		d.failStep(ps.ID, attempt, *failure, "")
		return
	}
	data := stepScheduledData{StepScheduledData: events.StepScheduledData{
		Activity: ps.Activity, Queue: queueOf(ps), Input: list,
		ForEach: &events.ForEachData{Count: n, MaxParallel: ps.EffectiveMaxParallel(), FailFast: ps.EffectiveFailFast()},
	}}
	d.emit(ps.ID, attempt, events.StepScheduled, data, "")
	d.emit(ps.ID, attempt, events.StepStarted, events.StepStartedData{}, "")
	d.fanOut(ps)
}

// forEachList evaluates forEach step ps's list, as the JSON its
// StepScheduled records, and its length.
func (d *decider) forEachList(ps *plan.Step) (json.RawMessage, int, *events.StepError) {
	l, err := d.p.ForEachList(ps.ID, expr.Limits{})
	if err != nil {
		return nil, 0, expressionError(err)
	}
	items, err := l.Eval(d.vars(ps.ID), plan.MaxForEachElements)
	if err != nil {
		return nil, 0, expressionError(err)
	}
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = string(it)
	}
	list, failure := bounded(json.RawMessage("["+strings.Join(parts, ",")+"]"), nil, "the forEach list", plan.MaxForEachBytes)
	return list, len(items), failure
}

// fanOut moves forEach step ps on: it starts elements while fewer than
// maxParallel are active (policy retries whose time has come first), and
// ends the step when its elements have ended, or at the first failure
// under failFast. Nothing starts unless the run is RUNNING.
func (d *decider) fanOut(ps *plan.Step) {
	fan, ok := d.s.Fans[ps.ID]
	if !ok || !d.s.Steps[ps.ID].InFlight() {
		return
	}
	failFast := ps.EffectiveFailFast()
	if d.s.Status == events.RunStatusRunning {
		if fan.Waiting > 0 {
			d.retryDue(ps)
		}
		for fan = d.s.Fans[ps.ID]; fan.Active() < ps.EffectiveMaxParallel() && fan.Next < len(fan.Items) &&
			(fan.Failed == 0 || !failFast); fan = d.s.Fans[ps.ID] {
			d.scheduleChild(ps, fan.Next)
		}
	}
	switch {
	case fan.Failed > 0 && failFast:
		d.stopFan(ps, fan)
	case fan.Active() > 0 || fan.Next < len(fan.Items):
	case fan.Failed > 0:
		d.failStep(ps.ID, d.s.Steps[ps.ID].Attempt, d.fanError(ps.ID, fan), "")
	default:
		d.completeFan(ps, fan)
	}
}

// retryDue schedules the elements of ps waiting for a policy retry whose
// time has come.
func (d *decider) retryDue(ps *plan.Step) {
	fan := d.s.Fans[ps.ID]
	for i := range fan.Items {
		st := d.s.child(ps.ID, i)
		if childCategory(st) == childWaiting && !d.now.Before(st.RetryAt) {
			d.scheduleChild(ps, i)
		}
	}
}

// scheduleChild dispatches element i of forEach step ps: its current
// attempt's StepScheduled, with the input resolved for the element, and
// its task. An input that cannot be resolved fails the element.
func (d *decider) scheduleChild(ps *plan.Step, i int) {
	c := childStep(ps, i)
	attempt := d.s.child(ps.ID, i).Attempt
	if c.EffectiveKind() == plan.KindSubPlan {
		d.scheduleSubRun(c, attempt)
		return
	}
	input, resolved, failure := d.inputOf(c)
	if failure != nil {
		d.emit(c.ID, attempt, events.StepFailed, events.StepFailedData{Error: *failure}, "")
		return
	}
	data := stepScheduledData{StepScheduledData: events.StepScheduledData{Activity: c.Activity, Queue: queueOf(c)}}
	if resolved {
		data.Input = input
	}
	d.emit(c.ID, attempt, events.StepScheduled, data, "")
	d.out.Tasks = append(d.out.Tasks, d.taskOf(c, attempt, input))
	d.armScheduleToStart(c, attempt)
}

// stopFan fails forEach step ps at its first failed element: every
// element started and not ended fails CANCELLED (one in flight is asked
// to stop), and the step fails.
func (d *decider) stopFan(ps *plan.Step, fan Fan) {
	e := d.fanError(ps.ID, fan)
	stop := events.StepError{Code: CodeCancelled, Message: "cancelled: " + e.Message, Category: "CANCELLED"}
	for i := range fan.Items {
		id := events.ChildStepID(ps.ID, i)
		st := d.s.child(ps.ID, i)
		switch childCategory(st) {
		case childRunning:
			if ps.EffectiveKind() == plan.KindSubPlan {
				d.cancelChild(st.ChildRunID)
				break
			}
			c := Cancel{RunID: d.s.RunID, StepID: id, LogicalAttempt: st.Attempt, Queue: queueOf(ps), Reason: stop.Message}
			d.out.Cancels = append(d.out.Cancels, c)
			d.reconcileCancelled([]Cancel{c}, stop.Message)
		case childWaiting:
		default:
			continue
		}
		d.emit(id, st.Attempt, events.StepFailed, events.StepFailedData{Error: stop}, "")
	}
	d.failStep(ps.ID, d.s.Steps[ps.ID].Attempt, e, "")
}

// retryFailedElements brings back, as their next logical attempts with a
// fresh retry budget, the failed elements of forEach step parent, before
// RETRY_STEP retries the step itself: its next attempt runs them and
// keeps the outputs of those that succeeded.
func (d *decider) retryFailedElements(parent string) {
	for i := range d.s.Fans[parent].Items {
		if st := d.s.child(parent, i); st.Status == events.StepStatusFailed {
			d.emit(events.ChildStepID(parent, i), st.Attempt, events.StepRetryScheduled, events.StepRetryScheduledData{
				Error: st.Error, RetryAt: d.now, NextLogicalAttemptID: attemptID(st.Attempt + 1),
			}, "")
		}
	}
}

// fanError is the error of a forEach step that failed: its first failed
// element's, named.
func (d *decider) fanError(parent string, fan Fan) events.StepError {
	first, e := -1, events.StepError{}
	for i := range fan.Items {
		if st := d.s.child(parent, i); st.Status == events.StepStatusFailed && st.Error.Code != CodeCancelled {
			first, e = i, st.Error
			break
		}
	}
	return events.StepError{Code: CodeForEachFailed, Category: "USER",
		Message: fmt.Sprintf("element %d failed: %s: %s", first, e.Code, e.Message)}
}

// completeFan completes forEach step ps, whose elements all succeeded,
// with the list of their outputs in element order (null for none) and
// their artifacts; an output over plan.MaxForEachBytes fails it.
func (d *decider) completeFan(ps *plan.Step, fan Fan) {
	outs := make([]string, len(fan.Items))
	var artifacts []events.ArtifactRef
	for i := range fan.Items {
		st := d.s.child(ps.ID, i)
		outs[i] = cmp.Or(st.Output, "null")
		if st.Artifacts != "" {
			var refs []events.ArtifactRef
			_ = json.Unmarshal([]byte(st.Artifacts), &refs) // written by artifactsJSON
			artifacts = append(artifacts, refs...)
		}
	}
	out, failure := bounded(json.RawMessage("["+strings.Join(outs, ",")+"]"), nil, "the forEach output", plan.MaxForEachBytes)
	attempt := d.s.Steps[ps.ID].Attempt
	if failure != nil {
		d.failStep(ps.ID, attempt, *failure, "")
		return
	}
	d.emit(ps.ID, attempt, events.StepCompleted,
		events.StepCompletedData{Output: out, Artifacts: append([]events.ArtifactRef{}, artifacts...)}, "")
}
