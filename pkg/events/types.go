package events

// Type names an event. The names are case-sensitive and stable: they are
// persisted in the log and travel on the bus.
type Type string

// The 13 canonical event types of execution-semantics §1.2.
const (
	RunApproved    Type = "RunApproved"
	RunStarted     Type = "RunStarted"
	StepStarted    Type = "StepStarted"
	StepCompleted  Type = "StepCompleted"
	StepFailed     Type = "StepFailed"
	StepSkipped    Type = "StepSkipped"
	SignalAccepted Type = "SignalAccepted"
	SignalRejected Type = "SignalRejected"
	RunPaused      Type = "RunPaused"
	RunResumed     Type = "RunResumed"
	RunCompleted   Type = "RunCompleted"
	RunFailed      Type = "RunFailed"
	RunCancelled   Type = "RunCancelled"
)

// Additive event types (state-store contract §6: a new type is a minor
// change, and readers that do not know a type ignore it).
const (
	// StepScheduled records that the engine dispatched a step attempt to a
	// task queue. It is the first event of every logical attempt.
	StepScheduled Type = "StepScheduled"
	// StepRetryScheduled records a failed attempt that will be retried
	// after a durable backoff timer; the step returns to PENDING.
	StepRetryScheduled Type = "StepRetryScheduled"
	// RunQueued records that backpressure parked an approved run in the
	// run queue; the run stays APPROVED until the reconciler starts it.
	RunQueued Type = "RunQueued"
	// SignalApplied records that the engine acted on an accepted signal,
	// or, with a reason, that the signal made no sense in the run's state.
	SignalApplied Type = "SignalApplied"
)

// CanonicalTypes lists the 13 types of execution-semantics §1.2 in the
// order of that table.
var CanonicalTypes = []Type{
	RunApproved, RunStarted, StepStarted, StepCompleted, StepFailed,
	StepSkipped, SignalAccepted, SignalRejected, RunPaused, RunResumed,
	RunCompleted, RunFailed, RunCancelled,
}

// AdditiveTypes lists the types Weft adds to the canonical set.
var AdditiveTypes = []Type{StepScheduled, StepRetryScheduled, RunQueued, SignalApplied, ChildRunEnded}

// Known reports whether t is a type this version of Weft writes.
func (t Type) Known() bool {
	for _, k := range CanonicalTypes {
		if k == t {
			return true
		}
	}
	for _, k := range AdditiveTypes {
		if k == t {
			return true
		}
	}
	return false
}
