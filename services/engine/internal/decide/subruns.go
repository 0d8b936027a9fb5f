package decide

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// This file runs subPlan steps, whose attempts are child runs
// (docs/plans.md, "Child runs"). An attempt records StepScheduled, naming
// the child (events.ChildRunID) and its input, and StepStarted, and asks
// the shell to start the child (Decision.Starts): the child's RunApproved
// is appended in the same transaction as the parent's events, so an
// attempt has its child exactly when its StepScheduled is in the log. The
// child's round that ends it appends ChildRunEnded to the parent's log
// (Decision.ToOtherRuns), and the parent's next round ends the step from
// it: with the child's output, or failed with the child's failure. A
// parent that is cancelled or fails asks its running children whose step
// says ParentCloseCancel to stop, with a CANCEL signal in their logs.

// Error codes of subPlan steps.
const (
	// CodeChildRunFailed fails a subPlan step whose child run failed; its
	// message names the child run and why it failed.
	CodeChildRunFailed = "CHILD_RUN_FAILED"
	// CodeChildRunCancelled fails a subPlan step whose child run was
	// cancelled.
	CodeChildRunCancelled = "CHILD_RUN_CANCELLED"
	// CodeChildRunRefused fails a subPlan step whose child could not be
	// started: its planRef names no registered version, or an archived
	// one; its input does not fit the child plan's input schema; or the
	// child would nest deeper than the engine's MaxRunDepth.
	CodeChildRunRefused = "CHILD_RUN_REFUSED"
)

// ChildStart asks the shell to approve a child run, in the round's
// transaction, for attempt LogicalAttempt of subPlan step StepID.
type ChildStart struct {
	StepID         string
	LogicalAttempt int
	// RunID and RunRequestID are the child's (events.ChildRunID,
	// events.ChildRunRequestID).
	RunID, RunRequestID string
	// Step is the plan step: its PlanRef or inline Plan is the child's
	// plan.
	Step *plan.Step
	// Input is the child's input, the step's input with its expressions
	// resolved.
	Input json.RawMessage
	// Parent is the link the child's RunApproved records.
	Parent events.RunParent
}

// ChildEnded reports that the child run of attempt LogicalAttempt of
// subPlan step StepID ended: the parent's ChildRunEnded event, or a
// child the shell could not start (ChildRunRefused).
type ChildEnded struct {
	StepID         string
	LogicalAttempt int
	events.ChildRunEndedData
	Now time.Time
}

func (in ChildEnded) now() time.Time { return in.Now }

// ChildRunRefused is the ChildEnded of a child the shell could not start
// for start, for the reason e says (CodeChildRunRefused).
func ChildRunRefused(start ChildStart, message string, now time.Time) ChildEnded {
	return ChildEnded{StepID: start.StepID, LogicalAttempt: start.LogicalAttempt, Now: now,
		ChildRunEndedData: events.ChildRunEndedData{ChildRunID: start.RunID, Status: events.RunStatusFailed,
			Error:  &events.StepError{Code: CodeChildRunRefused, Message: message},
			Reason: message}}
}

// scheduleSubRun dispatches attempt of subPlan step ps, or of an element
// of a forEach subPlan step: StepScheduled with the child's id and input,
// StepStarted, and the child's start.
func (d *decider) scheduleSubRun(ps *plan.Step, attempt int) {
	input, _, failure := d.inputOf(ps)
	if failure != nil {
		d.failStep(ps.ID, attempt, *failure, "")
		return
	}
	child := events.ChildRunID(d.s.RunID, ps.ID, attempt, d.now)
	data := stepScheduledData{StepScheduledData: events.StepScheduledData{Input: input, ChildRunID: child}}
	d.emit(ps.ID, attempt, events.StepScheduled, data, "")
	d.emit(ps.ID, attempt, events.StepStarted, events.StepStartedData{}, "")
	d.out.Starts = append(d.out.Starts, ChildStart{
		StepID: ps.ID, LogicalAttempt: attempt, RunID: child,
		RunRequestID: events.ChildRunRequestID(d.s.RunID, ps.ID, attempt),
		Step:         ps, Input: input,
		Parent: events.RunParent{RunID: d.s.RunID, StepID: ps.ID, LogicalAttemptID: attemptID(attempt),
			PlanVersion: d.p.PlanVersion, Depth: d.s.Run.Parent.Depth + 1},
	})
}

// childEnded ends the attempt in names, if it is in flight: completed
// with the child's output, or failed with its failure under the step's
// retry policy (none unless the step sets one).
func (d *decider) childEnded(in ChildEnded) {
	ps, st, ok := d.liveSubRun(in.StepID, in.LogicalAttempt)
	if !ok || (st.ChildRunID != "" && st.ChildRunID != in.ChildRunID) {
		return
	}
	d.s.ChildEnds = dropChildEnd(d.s.ChildEnds, in.StepID, in.LogicalAttempt)
	if in.Status == events.RunStatusCompleted {
		d.emit(ps.ID, st.Attempt, events.StepCompleted,
			events.StepCompletedData{Output: slices.Clone(in.Output), Artifacts: []events.ArtifactRef{}}, "")
		d.dispatch()
		d.settle()
		return
	}
	d.failAttempt(ps, st, childFailure(in), 0, "")
}

// childFailure is the step error of a child that did not complete.
func childFailure(in ChildEnded) events.StepError {
	switch {
	case in.Error != nil && in.Error.Code == CodeChildRunRefused:
		return *in.Error
	case in.Status == events.RunStatusCancelled:
		return events.StepError{Code: CodeChildRunCancelled,
			Message: fmt.Sprintf("child run %s was cancelled: %s", in.ChildRunID, in.Reason)}
	}
	e := events.StepError{Code: CodeChildRunFailed, Retryable: true,
		Message: fmt.Sprintf("child run %s failed: %s", in.ChildRunID, in.Reason)}
	if in.Error != nil {
		e.Message = fmt.Sprintf("child run %s failed: %s: %s", in.ChildRunID, in.Error.Code, in.Error.Message)
	}
	return e
}

// liveSubRun returns the plan step and state of a subPlan attempt a
// child's end reports on, if it is current and in flight in a run that
// is RUNNING or PAUSED.
func (d *decider) liveSubRun(stepID string, attempt int) (*plan.Step, StepState, bool) {
	if d.s.Status != events.RunStatusRunning && d.s.Status != events.RunStatusPaused {
		return nil, StepState{}, false
	}
	ps, ok := d.step(stepID)
	st, _ := d.s.stepState(stepID)
	if !ok || ps.EffectiveKind() != plan.KindSubPlan || ps.ForEach != "" || st.Attempt != attempt || !st.InFlight() {
		return nil, StepState{}, false
	}
	return ps, st, true
}

// applyChildEnds ends the subPlan attempts whose ChildRunEnded is in the
// log and not yet acted on, in log order: a round acts on them whatever
// its input, so that a lost bus message costs a round, not the step.
func (d *decider) applyChildEnds() {
	for _, in := range slices.Clone(d.s.ChildEnds) {
		in.Now = d.now
		d.childEnded(in)
	}
}

// closeRun finishes what a decision that ended the run, or left it
// failing, owes other runs (Decision.ToOtherRuns): a child run that ended
// tells its parent (ChildRunEnded); a run cancelled, failed, or failing
// with a failure no step handles, cancels its running children whose step
// says ParentCloseCancel. was is the run's status before the decision.
func (d *decider) closeRun(was events.RunStatus) {
	if len(d.out.Events) == 0 {
		return // nothing changed: what it owes was sent by the round that changed it
	}
	ended := !was.Terminal() && d.s.Status.Terminal()
	if ended && d.s.Run.Parent.RunID != "" {
		d.tellParent()
	}
	if !d.p.UsesSubPlans() {
		return // no child to cancel: the common run pays no more
	}
	failing := (d.s.Status == events.RunStatusRunning || d.s.Status == events.RunStatusPaused) && d.blockingFailure() != ""
	if (!ended || d.s.Status == events.RunStatusCompleted) && !failing {
		return
	}
	d.s.subRuns(d.p.Plan, func(ps *plan.Step, st StepState) {
		if st.ChildRunID == "" || ps.EffectiveParentClose() != plan.ParentCloseCancel {
			return
		}
		// A run's timeout fails its in-flight attempts, and their children
		// still run.
		timedOut := st.Status == events.StepStatusFailed && st.Error.Code == CodeRunTimeout
		if st.InFlight() || (ended && timedOut) {
			d.cancelChild(st.ChildRunID)
		}
	})
}

// subRuns calls f with the plan step and state of every subPlan step of
// p but forEach ones, whose elements it gives instead, as activities does
// for activity steps.
func (s State) subRuns(p *plan.Plan, f func(ps *plan.Step, st StepState)) {
	for i := range p.Steps {
		if ps := &p.Steps[i]; ps.EffectiveKind() == plan.KindSubPlan && ps.ForEach == "" {
			f(ps, s.Steps[ps.ID])
		}
	}
	s.elements(p, func(ps *plan.Step, st StepState) {
		if ps.EffectiveKind() == plan.KindSubPlan {
			f(ps, st)
		}
	})
}

// tellParent appends to the parent's log the ChildRunEnded of this run's
// end, keyed as the parent's step attempt.
func (d *decider) tellParent() {
	par := d.s.Run.Parent
	data := events.ChildRunEndedData{ChildRunID: d.s.RunID, Status: d.s.Status}
	switch end := d.endEvent().(type) {
	case events.RunCompletedData:
		data.Output = end.Output
	case events.RunFailedData:
		data.Error, data.Reason = end.Error, end.Reason
	case events.RunCancelledData:
		data.Reason = end.Reason
	}
	d.out.ToOtherRuns = append(d.out.ToOtherRuns, events.Spec{
		RunID: par.RunID, StepID: par.StepID, LogicalAttemptID: par.LogicalAttemptID, Type: events.ChildRunEnded,
		PlanVersion: par.PlanVersion, Data: data, EmittedAt: d.now,
	})
}

// endEvent is the payload of the run's terminal event in the decision.
func (d *decider) endEvent() any {
	for i := len(d.out.Events) - 1; i >= 0; i-- {
		if e := d.out.Events[i]; e.Type == events.RunCompleted || e.Type == events.RunFailed || e.Type == events.RunCancelled {
			return e.Data
		}
	}
	return nil
}

// ParentClosedSignalID is the signalId of the CANCEL a parent's close
// appends to its child's log: "parent-closed-<parent run>", the same for
// every round that sends it, so the child's log keeps one.
func ParentClosedSignalID(parentRunID string) string { return "parent-closed-" + parentRunID }

// cancelChild appends a CANCEL signal to child's log.
func (d *decider) cancelChild(child string) {
	reason := fmt.Sprintf("parent run %s %s", d.s.RunID, parentCloseReason(d.s.Status))
	d.out.ToOtherRuns = append(d.out.ToOtherRuns, CancelSignal(child, ParentClosedSignalID(d.s.RunID), reason, d.now))
}

// CancelSignal is the SignalAccepted of a CANCEL, signalID, with reason,
// for the log of run: what a round appends to another run's log to
// cancel it (Decision.ToOtherRuns). Its storage key has the gateway's
// form (sig:<run>:<name>:<id>:<n>), so one signalID sent again by a
// later round is kept once.
func CancelSignal(run, signalID, reason string, now time.Time) events.Spec {
	payload, _ := json.Marshal(map[string]string{"reason": reason})
	// The key's components need no escaping here: a run id, CANCEL and
	// ids the engine makes.
	key := "sig:" + run + ":" + plan.SignalCancel + ":" + signalID + ":1"
	return events.Spec{
		RunID: run, LogicalAttemptID: key, Type: events.SignalAccepted,
		Data:      events.SignalAcceptedData{SignalName: plan.SignalCancel, SignalID: signalID, Payload: payload},
		EmittedAt: now,
	}
}

// parentCloseReason says why a parent cancels its children.
func parentCloseReason(status events.RunStatus) string {
	switch status {
	case events.RunStatusCancelled:
		return "was cancelled"
	case events.RunStatusFailed:
		return "failed"
	default:
		return "is failing"
	}
}

// dropChildEnd returns ends without those of step id at attempt or
// before.
func dropChildEnd(ends []ChildEnded, id string, attempt int) []ChildEnded {
	out := slices.DeleteFunc(slices.Clone(ends), func(e ChildEnded) bool { return e.StepID == id && e.LogicalAttempt <= attempt })
	if len(out) == 0 {
		return nil
	}
	return out
}

// After decides each of ins, in order, on the state that d, a
// decision Decide made on s, leaves, and returns d with what they decided
// appended: the shell's way to act in the same round on what it learned
// while writing d, a child run it could not start (ChildRunRefused).
func After(p *plan.Plan, s State, d Decision, ins ...Input) Decision {
	return afterWith(&Prepared{Plan: p}, s, d, ins...)
}

// afterWith is After on a prepared plan.
func afterWith(p *Prepared, s State, d Decision, ins ...Input) Decision {
	after := s.clone()
	for _, e := range d.Events {
		n, _ := strconv.Atoi(e.LogicalAttemptID)
		after.apply(factOfSpec(e, n))
	}
	for _, in := range ins {
		var more Decision
		more, after = decideWith(p, after, in)
		d = d.merge(more)
	}
	return d
}

// merge returns d followed by more.
func (d Decision) merge(more Decision) Decision {
	d.Events = append(slices.Clip(d.Events), more.Events...)
	d.Tasks = append(slices.Clip(d.Tasks), more.Tasks...)
	d.Timers = append(slices.Clip(d.Timers), more.Timers...)
	d.Cancels = append(slices.Clip(d.Cancels), more.Cancels...)
	d.Reconciliations = append(slices.Clip(d.Reconciliations), more.Reconciliations...)
	d.Starts = append(slices.Clip(d.Starts), more.Starts...)
	d.ToOtherRuns = append(slices.Clip(d.ToOtherRuns), more.ToOtherRuns...)
	return d
}
