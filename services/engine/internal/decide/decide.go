package decide

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/task"
)

// Decide returns what the engine does about in, given the run's plan p
// (validated, the one the run was approved with) and its state s, folded
// by Fold (or NewState and Apply) with the same plan. It is
// pure: no I/O, no clock but in's Now, no randomness but in's Jitter, and
// it never modifies s or p. The same (p, s, in) always gives the same
// Decision, and folding the Decision's events into s gives the state the
// next round starts from. Every input first applies the signals
// accepted before it and not yet applied, in acceptance order; duplicate
// and stale inputs then add nothing, so with no signal pending they give
// the zero Decision. See the package documentation for the rules.
// A plan decided on again and again (every round of its runs) is better
// Prepared once: Prepared.Decide is Decide without working out again what
// depends on the plan alone.
func Decide(p *plan.Plan, s State, in Input) Decision {
	d, _ := decide(p, s, in)
	return d
}

// decide is Decide that also returns its working state: s with the
// decision's events folded in.
func decide(p *plan.Plan, s State, in Input) (Decision, State) {
	return decideWith(&Prepared{Plan: p}, s, in)
}

// decideWith is decide on a prepared plan.
func decideWith(p *Prepared, s State, in Input) (Decision, State) {
	if s.RunID == "" || in == nil {
		return Decision{}, s
	}
	d := &decider{p: p, s: s.clone(), now: in.now(), order: p.TopoOrder()}
	switch in := in.(type) {
	case RunApproved:
		d.start(in.Full, in.Hold, in.DelayUntil, in.Refuse, in.Rerun)
		d.applyPending()
	case ResultStarted:
		d.applyPending()
		d.started(in)
	case ResultCompleted:
		d.applyPending()
		d.completed(in)
	case ResultFailed:
		d.applyPending()
		d.failed(in)
	case SignalAccepted:
		d.signal(in)
	case TimerFired:
		d.applyPending()
		d.timer(in)
	case Resync:
		d.resync(in)
	case ChildEnded:
		d.applyPending()
		d.childEnded(in)
	}
	d.applyChildEnds()
	d.closeRun(s.Status)
	return d.out, d.s
}

// decider is one Decide call: a working copy of the state into which every
// emitted event is folded at once, so later rules see earlier effects.
type decider struct {
	p     *Prepared
	s     State
	now   time.Time
	order []string
	cause string // the signal the round applies: every event's causedBySignalId
	out   Decision
}

// emit appends an event and folds it into the working state. attempt is
// the logical attempt of a step event, or the occurrence number of a
// repeatable run-level event, or 0.
func (d *decider) emit(stepID string, attempt int, typ events.Type, data any, engine string) {
	d.record(d.spec(stepID, attempt, typ, data, engine), attempt)
}

// spec is the event emit would append.
func (d *decider) spec(stepID string, attempt int, typ events.Type, data any, engine string) events.Spec {
	return events.Spec{
		RunID: d.s.RunID, StepID: stepID, LogicalAttemptID: attemptID(attempt), Type: typ,
		PlanVersion: d.p.PlanVersion, Data: data, CausedBySignalID: d.cause, EngineAttemptID: engine,
		EmittedAt: d.now,
	}
}

// record appends e, of logical attempt or occurrence attempt, to the
// decision and applies it to the working state.
func (d *decider) record(e events.Spec, attempt int) {
	d.out.Events = append(d.out.Events, e)
	d.s.apply(factOfSpec(e, attempt))
}

// start handles RunApproved: an APPROVED run starts with its roots, or,
// when its environment is full, is queued (once), or, under DELAY, starts
// with its first dispatch held until delayUntil by a delay timer, or,
// refused by a concurrency limit (refuse, the reason), is cancelled. A
// rerun copies its source's outcomes right after RunStarted (rerun.go).
func (d *decider) start(full bool, hold events.RunQueuedData, delayUntil time.Time, refuse string, rerun Rerun) {
	if d.s.Status != events.RunStatusApproved {
		return
	}
	if refuse != "" {
		d.emit("", 0, events.RunCancelled, events.RunCancelledData{Reason: refuse}, "")
		return
	}
	if full {
		if !d.s.Queued {
			d.emit("", 0, events.RunQueued, hold, "")
		}
		return
	}
	if d.now.Before(delayUntil) {
		d.emit("", 0, events.RunStarted, events.RunStartedData{DelayedUntil: delayUntil}, "")
		if d.copyReused(rerun) {
			d.armRunTimeout()
			d.setTimer("", 1, TimerDelay, delayUntil)
		}
		return
	}
	d.emit("", 0, events.RunStarted, nil, "")
	if !d.copyReused(rerun) {
		return
	}
	d.armRunTimeout()
	d.dispatch()
	d.settle()
}

// live returns the plan step and state of an activity attempt a worker
// reports on, if the report is current: the run is RUNNING or PAUSED, and
// the attempt is the step's current one, dispatched, without an outcome.
func (d *decider) live(stepID string, attempt int) (*plan.Step, StepState, bool) {
	if d.s.Status != events.RunStatusRunning && d.s.Status != events.RunStatusPaused {
		return nil, StepState{}, false
	}
	ps, ok := d.step(stepID)
	st, _ := d.s.stepState(stepID)
	if !ok || ps.EffectiveKind() != plan.KindActivity || ps.ForEach != "" || st.Attempt != attempt || !st.InFlight() {
		return nil, StepState{}, false
	}
	return ps, st, true
}

// started handles ResultStarted of a current, not yet started attempt.
func (d *decider) started(in ResultStarted) {
	if _, st, ok := d.live(in.StepID, in.LogicalAttempt); ok && st.Status == events.StepStatusPending {
		d.markStarted(st, in)
		d.armHeartbeat(in.StepID, st.Attempt)
	}
}

// markStarted records StepStarted for st's attempt, reported by in, unless
// the attempt has started already, and returns the step's state after.
// A final result with no started result before it (a worker reports
// StepStarted only for an activity still running after a moment, and it
// fails open) marks its attempt started too (impliedStart), so that every
// attempt's log reads StepStarted before its outcome.
func (d *decider) markStarted(st StepState, in ResultStarted) StepState {
	if st.Status != events.StepStatusPending {
		return st
	}
	in.StartedAt = startedWithin(in.StartedAt, st.ScheduledAt, d.now)
	d.emit(in.StepID, st.Attempt, events.StepStarted, startedData(in), in.EngineAttemptID)
	st, _ = d.s.stepState(in.StepID)
	return st
}

// startedWithin is the start a worker reported, kept between the
// attempt's scheduling and now (a worker's clock may be off); zero when
// it reported none.
func startedWithin(reported, scheduled, now time.Time) time.Time {
	switch {
	case reported.IsZero():
		return time.Time{}
	case reported.Before(scheduled):
		return scheduled
	case reported.After(now):
		return now
	}
	return reported
}

// impliedStart is the started result a final result implies: the same
// worker, delivery, activity key and start.
func impliedStart(stepID string, attempt int, workerID, engine string, rep *task.ResultReconcile, startedAt time.Time) ResultStarted {
	in := ResultStarted{StepID: stepID, LogicalAttempt: attempt, EngineAttemptID: engine, WorkerID: workerID, StartedAt: startedAt}
	if rep != nil {
		in.ActivityKey = rep.IdempotencyKey
	}
	return in
}

// completed handles ResultCompleted: the step succeeds and its ready
// dependants are dispatched. Output that is not JSON fails the attempt (a
// keyed attempt's record says its side effect completed without a usable
// result).
func (d *decider) completed(in ResultCompleted) {
	ps, st, ok := d.live(in.StepID, in.LogicalAttempt)
	if !ok {
		return
	}
	st = d.markStarted(st, impliedStart(in.StepID, in.LogicalAttempt, in.WorkerID, in.EngineAttemptID, in.Reconcile, in.StartedAt))
	if len(in.Output) > 0 && !json.Valid(in.Output) {
		bad := events.StepError{Code: CodeInvalidOutput, Message: "the reported output is not valid JSON"}
		d.reconcile(ps, st, in.Reconcile, task.StatusCompleted, nil, &bad)
		d.failAttempt(ps, st, bad, 0, in.EngineAttemptID)
		return
	}
	data := events.StepCompletedData{
		Output:    slices.Clone(in.Output),
		Artifacts: append([]events.ArtifactRef{}, in.Artifacts...),
	}
	d.emit(in.StepID, st.Attempt, events.StepCompleted, completedData(data, in.Reconcile), in.EngineAttemptID)
	d.reconcile(ps, st, in.Reconcile, task.StatusCompleted,
		&task.ReconcileResult{Output: data.Output, Artifacts: slices.Clone(in.Artifacts)}, nil)
	d.dispatch()
	d.settle()
}

// failed handles ResultFailed: retry under the step's policy, or fail. A
// keyed attempt whose side effect the worker reports completed (its result
// unusable) is never retried: a retry would repeat the side effect.
func (d *decider) failed(in ResultFailed) {
	ps, st, ok := d.live(in.StepID, in.LogicalAttempt)
	if !ok {
		return
	}
	st = d.markStarted(st, impliedStart(in.StepID, in.LogicalAttempt, in.WorkerID, in.EngineAttemptID, in.Reconcile, in.StartedAt))
	e, status := in.Error, failureStatus(in.Reconcile)
	if status == task.StatusCompleted {
		e.Retryable = false
	}
	d.reconcile(ps, st, in.Reconcile, status, nil, &e)
	d.failAttempt(ps, st, e, in.Jitter, in.EngineAttemptID)
}

// failAttempt retries the failed attempt when the error is retryable, its
// code is not listed as non-retryable and the policy's series has attempts
// left: StepRetryScheduled, and a retry timer unless the backoff is zero
// (then the retry is dispatched at once) or the run, failed by another
// step, ends now. Otherwise the step fails.
func (d *decider) failAttempt(ps *plan.Step, st StepState, e events.StepError, jitter float64, engine string) {
	pol := retryPolicy(ps)
	n := st.Attempt - st.SeriesStart + 1
	if !e.Retryable || !pol.Retryable(e.Code) || n >= pol.MaxAttempts {
		d.failStep(ps.ID, st.Attempt, e, engine)
		return
	}
	at := d.now.Add(pol.Backoff(n, jitter))
	next := st.Attempt + 1
	d.emit(ps.ID, st.Attempt, events.StepRetryScheduled, events.StepRetryScheduledData{
		Error: e, RetryAt: at, NextLogicalAttemptID: attemptID(next),
	}, engine)
	d.dispatch()
	d.settle() // a run another step failed ends once nothing is in flight
	if at.After(d.now) && !d.s.Status.Terminal() {
		d.setTimer(ps.ID, next, TimerRetry, at)
	}
}

// timer handles TimerFired. A timer that fires before its due time is set
// again; one that no longer matches the step's attempt is stale.
func (d *decider) timer(in TimerFired) {
	if d.s.Status.Terminal() || d.timeout(in) {
		return
	}
	if in.Kind == TimerDelay {
		if d.now.Before(d.s.DelayedUntil) {
			d.setTimer("", 1, TimerDelay, d.s.DelayedUntil)
			return
		}
		d.dispatch()
		d.settle()
		return
	}
	st, ok := d.s.stepState(in.StepID)
	if !ok || st.Attempt != in.LogicalAttempt {
		return
	}
	switch {
	case in.Kind == TimerRetry && st.Status == events.StepStatusPending && !st.Scheduled && !st.RetryAt.IsZero():
		if d.now.Before(st.RetryAt) {
			d.setTimer(in.StepID, st.Attempt, in.Kind, st.RetryAt)
			return
		}
		d.dispatch()
		d.settle()
	case in.Kind == TimerWaitTimeout && st.InFlight() && !st.Deadline.IsZero():
		if d.now.Before(st.Deadline) {
			d.setTimer(in.StepID, st.Attempt, in.Kind, st.Deadline)
			return
		}
		e := events.StepError{Code: CodeSignalTimeout, Message: "no matching signal arrived within the step's timeout"}
		d.failStep(in.StepID, st.Attempt, e, "")
	}
}

// setTimer adds a timer to the decision.
func (d *decider) setTimer(stepID string, attempt int, kind TimerKind, at time.Time) {
	d.out.Timers = append(d.out.Timers, Timer{RunID: d.s.RunID, StepID: stepID, LogicalAttempt: attempt, Kind: kind, DueAt: at})
}

// retryPolicy returns an activity step's policy, DefaultRetryPolicy when
// unset.
func retryPolicy(ps *plan.Step) plan.RetryPolicy {
	if ps.Retry == nil && ps.EffectiveKind() == plan.KindSubPlan {
		return plan.RetryPolicy{MaxAttempts: 1} // a child run is not retried unless the step says so
	}
	if ps.Retry == nil {
		return plan.DefaultRetryPolicy()
	}
	return *ps.Retry
}

// queueOf returns the step's task queue, DefaultQueue when unset.
func queueOf(ps *plan.Step) string {
	if ps.Queue == "" {
		return plan.DefaultQueue
	}
	return ps.Queue
}
