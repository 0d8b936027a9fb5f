package decide

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// verdict is what a signal did, recorded in its SignalApplied event.
type verdict struct {
	code     string // empty when applied or buffered
	buffered bool   // kept for a waitSignal step that does not wait yet
	reason   string
	steps    []string
}

// ignored returns the verdict of a signal that made no sense.
func ignored(code, format string, args ...any) verdict {
	return verdict{code: code, reason: fmt.Sprintf(format, args...)}
}

// signal handles SignalAccepted. A signal the run already applied decides
// nothing. Any other is applied in acceptance (runSeq) order, whatever
// order the bus delivered it in (DESIGN.md, "Scaling out"): the signals
// accepted before it and still pending are applied first, each as if its
// own message had come, then in. So with several engines sharing the
// events consumer, a RESUME delivered before the PAUSE accepted ahead of it
// still finds the run PAUSED, and the PAUSE's own message decides nothing
// when it comes. A signal absent from Pending (its SignalAccepted event not
// folded yet) comes after every pending one. Each applied signal produces
// exactly one SignalApplied, after the events it caused, all carrying its
// id as causedBySignalId.
//
// A run approved and not started yet takes only CANCEL: any other signal
// waits, pending, for the round that starts the run, which applies it
// right after RunStarted (waitsForStart).
func (d *decider) signal(in SignalAccepted) {
	if in.SignalID == "" || d.s.Signals[in.ref()] {
		return
	}
	if d.waitsForStart(in.Name) {
		d.s.accept(in) // pending, as folding its SignalAccepted event does
		return
	}
	for _, earlier := range d.s.pendingBefore(in.ref()) {
		earlier.Now = d.now
		d.applyOne(earlier)
	}
	d.applyOne(in)
}

// applyPending applies every signal accepted and not yet applied, in
// acceptance order, before the round acts on an input that is not a
// signal: a result, a timer or a resync comes after every signal accepted
// before its round, so a signal whose message the bus lost or has not
// delivered yet takes effect at the run's next round, and a run never
// ends with an accepted signal unapplied. Events after it carry no
// causedBySignalId.
//
// On a run not started yet (queued by its admission limit), only a CANCEL
// acts: the signals up to the last pending CANCEL are applied, in order,
// and those after it stay pending for the start.
func (d *decider) applyPending() {
	pending := d.s.Pending
	if d.s.Status == events.RunStatusApproved {
		end := 0
		for i, sig := range pending {
			if !d.waitsForStart(sig.Name) {
				end = i + 1
			}
		}
		pending = pending[:end]
	}
	for _, sig := range slices.Clone(pending) { // applying one removes it from d.s.Pending
		sig.Now = d.now
		d.applyOne(sig)
	}
	d.cause = ""
}

// waitsForStart reports whether a signal named name must wait for the
// run's start: the run is approved and not started (its start round has
// not come, or its admission limit queued it), and the signal is not a
// CANCEL. Applied now, it could only be ignored as RUN_NOT_STARTED, and a
// waitSignal step would then wait for ever for a signal its caller sent
// right after the start's answer.
func (d *decider) waitsForStart(name string) bool {
	return d.s.Status == events.RunStatusApproved && name != plan.SignalCancel
}

// applyOne applies one signal the run has not applied, and records its
// SignalApplied.
func (d *decider) applyOne(in SignalAccepted) {
	d.cause = in.SignalID
	d.s.accept(in) // as folding its SignalAccepted event did, when it is in the log
	v := d.applySignal(in)
	data := events.SignalAppliedData{SignalID: in.SignalID, SignalName: in.Name, Outcome: events.SignalOutcomeApplied,
		Code: v.code, Reason: v.reason, StepIDs: v.steps}
	switch {
	case v.code != "":
		data.Outcome = events.SignalOutcomeIgnored
	case v.buffered:
		data.Outcome = events.SignalOutcomeBuffered
	}
	d.emit("", d.s.SignalsApplied+1, events.SignalApplied, data, "")
	d.out.Events[len(d.out.Events)-1].ParentEventID = in.EventID
}

// applySignal acts on a signal and returns its verdict.
func (d *decider) applySignal(in SignalAccepted) verdict {
	status := d.s.Status
	switch {
	case status == events.RunStatusFailed && in.Name == plan.SignalRetryStep:
		return d.retryStep(in.Payload) // reopens the run
	case status.Terminal():
		return ignored(events.SignalCodeRunTerminal, "the run is %s and takes no more signals", status)
	case status == events.RunStatusPending:
		return ignored(events.SignalCodeRunNotStarted, "the run has not been approved")
	case in.Name == plan.SignalCancel:
		return d.cancel()
	case status != events.RunStatusRunning && status != events.RunStatusPaused:
		return ignored(events.SignalCodeRunNotStarted, "the run is %s and has not started; only CANCEL acts on it", status)
	}
	switch in.Name {
	case plan.SignalPause:
		if status != events.RunStatusRunning {
			return ignored(events.SignalCodeRunNotRunning, "PAUSE needs a RUNNING run; the run is %s", status)
		}
		d.emit("", d.s.Pauses+1, events.RunPaused, events.RunPausedData{Reason: "PAUSE signal"}, "")
		return verdict{reason: "paused the run: no new steps are dispatched, in-flight steps finish"}
	case plan.SignalResume:
		if status != events.RunStatusPaused {
			return ignored(events.SignalCodeRunNotPaused, "RESUME needs a PAUSED run; the run is %s", status)
		}
		d.emit("", d.s.Resumes+1, events.RunResumed, nil, "")
		d.dispatch()
		d.settle()
		return verdict{reason: "resumed the run"}
	case plan.SignalRetryStep:
		return d.retryStep(in.Payload)
	default:
		return d.deliver(in.Name, in.Payload)
	}
}

// cancel cancels a run that has not ended and asks the workers of its
// in-flight activity attempts to stop.
func (d *decider) cancel() verdict {
	reason := "cancelled by signal " + d.cause
	d.emit("", 0, events.RunCancelled, events.RunCancelledData{Reason: reason}, "")
	d.out.Cancels = d.s.InFlight(d.p.Plan, reason)
	d.reconcileCancelled(d.out.Cancels, reason)
	return verdict{reason: cancelledReason(len(d.out.Cancels))}
}

// cancelledReason is what a CANCEL's SignalApplied says when it asked
// inFlight attempts to stop.
func cancelledReason(inFlight int) string {
	switch inFlight {
	case 0:
		return "cancelled the run; no step was in flight"
	case 1:
		return "cancelled the run; 1 in-flight step asked to stop"
	default:
		return fmt.Sprintf("cancelled the run; %d in-flight steps asked to stop", inFlight)
	}
}

// retryStep re-runs a FAILED step as its next logical attempt, with a fresh
// retry budget, and brings back its SKIPPED dependants that no other failed
// step still blocks. Each gets StepRetryScheduled at once; the step is
// dispatched now unless the run is PAUSED.
func (d *decider) retryStep(payload json.RawMessage) verdict {
	var req struct {
		StepID string `json:"stepId"`
	}
	if err := json.Unmarshal(payload, &req); err != nil || req.StepID == "" {
		return ignored(events.SignalCodeBadPayload, `RETRY_STEP needs the payload {"stepId": "<id>"}`)
	}
	st, ok := d.s.Steps[req.StepID]
	if _, inPlan := d.p.Step(req.StepID); !ok || !inPlan {
		return ignored(events.SignalCodeUnknownStep, "the plan has no step %q", req.StepID)
	}
	if st.Status != events.StepStatusFailed {
		return ignored(events.SignalCodeStepNotFailed, "step %q is %s; RETRY_STEP re-runs a FAILED step", req.StepID, st.Status)
	}
	if d.s.Status == events.RunStatusFailed {
		d.emit("", d.s.Resumes+1, events.RunResumed, nil, "")
		d.armRunTimeout() // a reopened run's runTimeout counts afresh
	}
	d.retryFailedElements(req.StepID)
	d.emit(req.StepID, st.Attempt, events.StepRetryScheduled, events.StepRetryScheduledData{
		Error: st.Error, RetryAt: d.now, NextLogicalAttemptID: attemptID(st.Attempt + 1),
	}, "")
	steps := []string{req.StepID}
	skipped := events.StepError{Code: events.CodeSkipped, Message: fmt.Sprintf("brought back by RETRY_STEP of %q", req.StepID)}
	// Every skipped step no failure blocks any more comes back: the
	// retried step's dependants, and, on a reopened run, the steps the
	// run's failure skipped. A step a false condition skipped stays: its
	// condition read the results of ancestors that all succeeded.
	for _, dep := range d.order {
		if dst := d.s.Steps[dep]; dst.Status == events.StepStatusSkipped && dst.SkippedByCondition == "" && !d.failedAncestor(dep) {
			d.emit(dep, dst.Attempt, events.StepRetryScheduled, events.StepRetryScheduledData{
				Error: skipped, RetryAt: d.now, NextLogicalAttemptID: attemptID(dst.Attempt + 1),
			}, "")
			steps = append(steps, dep)
		}
	}
	d.dispatch()
	d.settle()
	return verdict{reason: fmt.Sprintf("step %q is back as logical attempt %d", req.StepID, st.Attempt+1), steps: steps}
}

// bufferFor is the verdict of a signal named name for the waitSignal
// steps known, none of which waits now: buffered for those that have not
// waited in their current attempt yet (the signal call records it), or
// NOT_WAITING when every one has (it completed, failed or was skipped).
func (d *decider) bufferFor(name string, known []string) verdict {
	var later []string
	for _, id := range known {
		if st := d.s.Steps[id]; st.Status == events.StepStatusPending && !st.Scheduled {
			later = append(later, id)
		}
	}
	if len(later) == 0 {
		st := d.s.Steps[known[0]]
		return ignored(events.SignalCodeNotWaiting, "step %q waits for %q but is not waiting now (%s, scheduled: %t)",
			known[0], name, st.Status, st.Scheduled)
	}
	return verdict{buffered: true, steps: later,
		reason: fmt.Sprintf("kept for step %q, which does not wait yet: it completes it when it does", later[0])}
}

// deliver completes the waitSignal steps waiting for a signal named name,
// with the payload as their output.
func (d *decider) deliver(name string, payload json.RawMessage) verdict {
	var known, waiting []string
	for _, id := range d.order {
		ps, _ := d.p.Step(id)
		if ps.EffectiveKind() == plan.KindWaitSignal && ps.Signal == name {
			known = append(known, id)
			if d.s.Steps[id].InFlight() {
				waiting = append(waiting, id)
			}
		}
	}
	switch {
	case len(known) == 0:
		return ignored(events.SignalCodeUnknownSignal, "no step of the plan waits for a signal named %q", name)
	case len(payload) > 0 && !json.Valid(payload):
		return ignored(events.SignalCodeBadPayload, "the payload is not valid JSON")
	case len(waiting) == 0:
		return d.bufferFor(name, known)
	}
	for _, id := range waiting {
		data := events.StepCompletedData{Output: slices.Clone(payload), Artifacts: []events.ArtifactRef{}}
		d.emit(id, d.s.Steps[id].Attempt, events.StepCompleted, data, "")
	}
	d.dispatch()
	d.settle()
	return verdict{reason: fmt.Sprintf("completed %d waiting step(s)", len(waiting)), steps: waiting}
}
