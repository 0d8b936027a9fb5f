package decide

import (
	"fmt"
	"time"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/task"
)

// This file decides the timeouts of schema version 2 (docs/plans.md,
// "Timeouts"): a step's scheduleToStartTimeout and heartbeatTimeout, and
// the plan's runTimeout. Each is a durable timer, armed when its clock
// starts and checked against the state when it fires; a timer that fires
// early is armed again, one whose attempt or run moved on is stale.
//
// Heartbeats are not events. The shell keeps the last one of each attempt
// outside the log and, when a TimerHeartbeat fires, hands its time in with
// TimerFired.LastHeartbeat; the decider only compares times, so it stays
// pure and a replay of the log decides the same.

// The timers of the timeouts.
const (
	// TimerScheduleToStart fires when an attempt may have waited in its
	// queue for its step's scheduleToStartTimeout; an attempt no worker
	// started then fails with CodeScheduleToStartTimeout.
	TimerScheduleToStart TimerKind = "scheduleToStart"
	// TimerHeartbeat fires when a started attempt may have gone its step's
	// heartbeatTimeout without a heartbeat; the shell reads the attempt's
	// last heartbeat into TimerFired.LastHeartbeat. A fresh one arms the
	// timer again (no event); otherwise the attempt fails with
	// CodeHeartbeatTimeout.
	TimerHeartbeat TimerKind = "heartbeat"
	// TimerRunTimeout fires when a run may have run for its plan's
	// runTimeout; a run not ended then fails with CodeRunTimeout. It is a
	// run timer: StepID is empty and LogicalAttempt 1.
	TimerRunTimeout TimerKind = "runTimeout"
)

// The error codes of the timeouts.
const (
	// CodeScheduleToStartTimeout fails an attempt no worker started within
	// its step's scheduleToStartTimeout; retryable under the step's policy.
	CodeScheduleToStartTimeout = "SCHEDULE_TO_START_TIMEOUT"
	// CodeHeartbeatTimeout fails a started attempt that sent no heartbeat
	// within its step's heartbeatTimeout; retryable under the step's policy.
	CodeHeartbeatTimeout = "HEARTBEAT_TIMEOUT"
	// CodeRunTimeout fails a run that did not end within its plan's
	// runTimeout, and each step attempt it had in flight.
	CodeRunTimeout = "RUN_TIMEOUT"
)

// categoryTimeout is the events.StepError category of the timeouts.
const categoryTimeout = "TIMEOUT"

// armRunTimeout arms the run's runTimeout timer, if its plan has one; the
// run has just started.
func (d *decider) armRunTimeout() {
	if d.p.RunTimeout > 0 {
		d.setTimer("", 1, TimerRunTimeout, d.s.Run.StartedAt.Add(d.p.RunTimeout.Std()))
	}
}

// armScheduleToStart arms the scheduleToStartTimeout timer of attempt of
// activity step ps, just scheduled, if the step has one.
func (d *decider) armScheduleToStart(ps *plan.Step, attempt int) {
	if t := ps.ScheduleToStartTimeout.Std(); t > 0 {
		d.setTimer(ps.ID, attempt, TimerScheduleToStart, d.now.Add(t))
	}
}

// armHeartbeat arms the heartbeatTimeout timer of step id's attempt, just
// started, if the step has one: its start counts as its first heartbeat.
func (d *decider) armHeartbeat(id string, attempt int) {
	if ps, ok := d.step(id); ok && ps.HeartbeatTimeout > 0 {
		d.setTimer(id, attempt, TimerHeartbeat, d.now.Add(ps.HeartbeatTimeout.Std()))
	}
}

// timeout handles a TimerFired of a timeout's kind and reports whether in
// was one.
func (d *decider) timeout(in TimerFired) bool {
	switch in.Kind {
	case TimerRunTimeout:
		d.runTimedOut()
	case TimerScheduleToStart:
		ps, st, ok := d.live(in.StepID, in.LogicalAttempt)
		if ok && st.Status == events.StepStatusPending && ps.ScheduleToStartTimeout > 0 {
			d.attemptTimedOut(ps, st, in, st.ScheduledAt.Add(ps.ScheduleToStartTimeout.Std()), events.StepError{
				Code: CodeScheduleToStartTimeout, Retryable: true, Category: categoryTimeout,
				Message: fmt.Sprintf("no worker started the attempt within its scheduleToStartTimeout of %s", ps.ScheduleToStartTimeout)})
		}
	case TimerHeartbeat:
		ps, st, ok := d.live(in.StepID, in.LogicalAttempt)
		if ok && st.Status == events.StepStatusRunning && ps.HeartbeatTimeout > 0 {
			last := st.StartedAt
			if in.LastHeartbeat.After(last) {
				last = in.LastHeartbeat
			}
			d.attemptTimedOut(ps, st, in, last.Add(ps.HeartbeatTimeout.Std()), events.StepError{
				Code: CodeHeartbeatTimeout, Retryable: true, Category: categoryTimeout,
				Message: fmt.Sprintf("no heartbeat within the heartbeatTimeout of %s", ps.HeartbeatTimeout)})
		}
	default:
		return false
	}
	return true
}

// attemptTimedOut arms in's timer again for due when due is still ahead;
// otherwise it fails attempt st of activity step ps with e, retried under
// the step's policy, and sends the attempt a cancel notice, so that a
// worker running it stops and one that takes it from the queue later
// drops it. A keyed attempt gets an indeterminate reconciliation record: a
// side effect cannot be ruled out.
func (d *decider) attemptTimedOut(ps *plan.Step, st StepState, in TimerFired, due time.Time, e events.StepError) {
	if d.now.Before(due) {
		d.setTimer(ps.ID, st.Attempt, in.Kind, due)
		return
	}
	d.out.Cancels = append(d.out.Cancels, Cancel{RunID: d.s.RunID, StepID: ps.ID, LogicalAttempt: st.Attempt,
		Queue: queueOf(ps), Reason: e.Code + ": " + e.Message, Notice: fmt.Sprintf("%s/%s/%d", e.Code, ps.ID, st.Attempt)})
	d.reconcile(ps, st, nil, task.StatusIndeterminate, nil, &e)
	d.failAttempt(ps, st, e, in.Jitter, "")
}

// runTimedOut fails a run that has not ended once its runTimeout has
// passed since it started: every attempt in flight fails with
// CodeRunTimeout (its workers get a cancel notice), every step not
// dispatched is skipped, and the run fails. No cleanup or compensation
// step runs after a run's timeout. Before the timeout it arms the timer
// again.
func (d *decider) runTimedOut() {
	if (d.s.Status != events.RunStatusRunning && d.s.Status != events.RunStatusPaused) ||
		d.p.RunTimeout <= 0 || d.s.Run.StartedAt.IsZero() {
		return
	}
	if d.now.Before(d.s.Run.StartedAt.Add(d.p.RunTimeout.Std())) {
		d.armRunTimeout()
		return
	}
	e := events.StepError{Code: CodeRunTimeout, Category: categoryTimeout,
		Message: fmt.Sprintf("the run did not end within its runTimeout of %s", d.p.RunTimeout)}
	cancels := d.s.InFlight(d.p.Plan, e.Code+": "+e.Message)
	for i := range cancels {
		cancels[i].Notice = CodeRunTimeout
	}
	d.reconcileCancelled(cancels, e.Message)
	d.out.Cancels = append(d.out.Cancels, cancels...)
	d.s.elements(d.p.Plan, func(ps *plan.Step, st StepState) {
		if c := childCategory(st); c == childRunning || c == childWaiting {
			d.emit(ps.ID, st.Attempt, events.StepFailed, events.StepFailedData{Error: e}, "")
		}
	})
	for _, id := range d.order {
		switch st := d.s.Steps[id]; {
		case st.InFlight():
			d.emit(id, st.Attempt, events.StepFailed, events.StepFailedData{Error: e}, "")
		case d.open(id):
			d.emit(id, st.Attempt, events.StepSkipped, events.StepSkippedData{Reason: e.Message}, "")
		}
	}
	d.emit("", d.s.Failures+1, events.RunFailed, events.RunFailedData{Reason: e.Message, Error: &e}, "")
}

// timeoutTimers lists the timers of the timeouts a live run of p needs
// armed (State.Timers): the run's runTimeout, the scheduleToStartTimeout
// of each attempt not started, the heartbeatTimeout of each started one
// (due a timeout after its start: the shell's last heartbeat moves it on
// when it fires).
func (s State) timeoutTimers(p *plan.Plan) []Timer {
	var out []Timer
	if p.RunTimeout > 0 && !s.Run.StartedAt.IsZero() {
		out = append(out, Timer{RunID: s.RunID, LogicalAttempt: 1, Kind: TimerRunTimeout, DueAt: s.Run.StartedAt.Add(p.RunTimeout.Std())})
	}
	s.activities(p, func(ps *plan.Step, st StepState) {
		if !st.InFlight() {
			return
		}
		t := Timer{RunID: s.RunID, StepID: ps.ID, LogicalAttempt: st.Attempt}
		switch {
		case st.Status == events.StepStatusPending && ps.ScheduleToStartTimeout > 0:
			t.Kind, t.DueAt = TimerScheduleToStart, st.ScheduledAt.Add(ps.ScheduleToStartTimeout.Std())
		case st.Status == events.StepStatusRunning && ps.HeartbeatTimeout > 0:
			t.Kind, t.DueAt = TimerHeartbeat, st.StartedAt.Add(ps.HeartbeatTimeout.Std())
		default:
			return
		}
		out = append(out, t)
	})
	return out
}
