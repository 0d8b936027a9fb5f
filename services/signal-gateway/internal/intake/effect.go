package intake

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// controlSignals are the control signal names, in the order refusals list
// them.
var controlSignals = []string{plan.SignalPause, plan.SignalResume, plan.SignalCancel, plan.SignalRetryStep}

// checkEffect returns the refusal of sig, and true, when sent to the run
// read under its head lock it could have no effect whatever the run's
// state: a name the run has no use for (api.CodeUnknownSignal), a RETRY_STEP
// of a step the plan does not have (InvalidArgument about the payload), a
// run that has ended (api.CodeRunTerminal), checked in that order. stepID is
// the step a RETRY_STEP names. A run whose RunApproved carries no plan is
// not checked against one. Outcomes that depend on the run's state (PAUSE
// of a paused run, a RETRY_STEP of a step that is not FAILED, a signal for
// a step that does not wait now) are not refused: the engine decides
// them, in the signal's SignalApplied.
func checkEffect(sig Signal, stepID string, run runInfo) (*Error, bool) {
	if run.plan.known {
		if !plan.IsControlSignal(sig.Name) && !slices.Contains(run.plan.waits, sig.Name) {
			return unknownSignal(sig, run.plan.waits), true
		}
		if sig.Name == plan.SignalRetryStep && !run.plan.stepKnown {
			e := invalid("payload", "names step %q, which the run's plan does not have", stepID)
			e.Details["stepId"] = stepID
			return e, true
		}
	}
	if run.ended != "" && (sig.Name != plan.SignalRetryStep || run.ended != events.RunFailed) {
		return runTerminal(sig, run.ended), true
	}
	return nil, false
}

// unknownSignal is the refusal of sig, whose name neither is a control
// signal nor is one of waits, those the run's waitSignal steps wait for.
func unknownSignal(sig Signal, waits []string) *Error {
	accepts := slices.Concat(controlSignals, waits)
	msg := fmt.Sprintf("run %s has no use for a signal named %q: it takes %s", sig.RunID, sig.Name, strings.Join(accepts, ", "))
	if len(waits) == 0 {
		msg += " (no step of its plan waits for a signal)"
	}
	for _, a := range accepts {
		if strings.EqualFold(a, sig.Name) {
			msg += fmt.Sprintf("; signal names are case-sensitive: did you mean %q?", a)
			break
		}
	}
	return &Error{Code: api.CodeUnknownSignal, Message: msg,
		Details: map[string]any{"runId": sig.RunID, "signalName": sig.Name, "accepts": accepts}}
}

// runTerminal is the refusal of sig to a run that ended with the event
// end.
func runTerminal(sig Signal, end events.Type) *Error {
	status := endStatus(end)
	msg := fmt.Sprintf("run %s has ended %s and takes no more signals", sig.RunID, status)
	if status == events.RunStatusFailed {
		msg += "; only RETRY_STEP of a failed step acts on it"
	}
	return &Error{Code: api.CodeRunTerminal, Message: msg,
		Details: map[string]any{"runId": sig.RunID, "signalName": sig.Name, "status": string(status)}}
}

// endStatus is the status a run ends in with the event end.
func endStatus(end events.Type) events.RunStatus {
	switch end {
	case events.RunCompleted:
		return events.RunStatusCompleted
	case events.RunFailed:
		return events.RunStatusFailed
	default:
		return events.RunStatusCancelled
	}
}
