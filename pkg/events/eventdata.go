package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"
)

// This file holds the typed eventData payloads. Every payload is part of the
// append-only history, which is kept for the life of the run, replicated to
// the event bus and shown to operators, so none may carry a secret value, a
// binary blob or a log: secrets travel as references resolved inside the
// activity, and large outputs as ArtifactRef pointers (execution-semantics §2).
//
// Readers ignore payload fields they do not know, and writers may add
// optional fields (state-store contract §6); the JSON names are lowerCamelCase.

// ArtifactRef points at an artifact a step produced. The artifact itself
// lives in object storage, never in the event log (execution-semantics §2).
type ArtifactRef struct {
	// URI locates the artifact, e.g. s3://bucket/key. Required.
	URI string `json:"uri"`
	// Kind names what the artifact is, e.g. "dbt-manifest". Required.
	Kind string `json:"kind"`
	// SHA256 is the hex SHA-256 of the artifact's bytes, when known.
	SHA256 string `json:"sha256,omitempty"`
	// SizeBytes is the artifact's size, when known.
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// ExpiresAt is when retention deletes the artifact; zero means unknown
	// and is omitted from JSON.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// StepError describes why a step attempt failed or was skipped. Message is
// for people and must not contain secrets or large blobs.
type StepError struct {
	// Code is a stable, machine-readable error code.
	Code string `json:"code"`
	// Message is a short human-readable description.
	Message string `json:"message"`
	// Retryable reports whether a new attempt may succeed.
	Retryable bool `json:"retryable"`
	// Category groups codes, e.g. "TIMEOUT" or "USER" (execution-semantics
	// §2 StepOutput.error.category).
	Category string `json:"category,omitempty"`
}

// RunApprovedData is the payload of RunApproved: the identity of the
// approved run request. The six ids form the run-request uniqueness key of
// execution-semantics §3.
type RunApprovedData struct {
	TenantID      string `json:"tenantId"`
	ProjectID     string `json:"projectId"`
	EnvironmentID string `json:"environmentId"`
	PlanID        string `json:"planId"`
	PlanVersion   string `json:"planVersion"`
	RunRequestID  string `json:"runRequestId"`
	// Input is the run's input document, references only (no secrets).
	Input json.RawMessage `json:"input,omitempty"`
	// Plan is the run's plan in its persisted JSON form (pkg/plan). The
	// event log is the run's source of truth, so the plan travels with the
	// approval rather than by reference to a table that could change.
	Plan json.RawMessage `json:"plan,omitempty"`
	// Parent is set on a child run, which a subPlan step of its parent
	// started (docs/plans.md, "Child runs").
	Parent *RunParent `json:"parent,omitempty"`
	// RerunOf is set on a rerun: the run it reruns, from which step, and
	// the events of that run whose outcomes it copies (docs/api.md,
	// "Rerun from a step").
	RerunOf *RerunOf `json:"rerunOf,omitempty"`
	// Labels are the run's labels: string keys and values within the
	// limits of api.CheckLabels, which the gateway checked; absent when
	// the run has none.
	Labels map[string]string `json:"labels,omitempty"`
	// Priority is the run's admission priority, 1 (lowest) to 5; absent
	// means 3 (api.DefaultPriority). A queued run of a higher priority
	// starts before those of a lower one (docs/flow-control.md).
	Priority int `json:"priority,omitempty"`
}

// RunStartedData is the payload of RunStarted. EngineRunRef duplicates the
// envelope field for writers that only fill the payload; the reducer
// prefers the envelope's value.
type RunStartedData struct {
	EngineRunRef json.RawMessage `json:"engineRunRef,omitempty"`
	// DelayedUntil, when set, is when the run may dispatch its first steps:
	// the DELAY backpressure policy started it into a full environment.
	DelayedUntil time.Time `json:"delayedUntil,omitzero"`
}

// StepScheduledData is the payload of StepScheduled: which activity the
// engine dispatched for the step and to which task queue.
type StepScheduledData struct {
	Activity string `json:"activity"`
	Queue    string `json:"queue"`
	// Input is the input the attempt was dispatched with, its expressions
	// resolved, when the plan step's input holds expressions (plan schema
	// version 2); absent otherwise, when the plan's input is what ran. It
	// is the record replay, the task, the UI and the CLI read: an
	// expression is evaluated once, when its attempt is scheduled.
	Input json.RawMessage `json:"input,omitempty"`
	// ForEach is set on the StepScheduled of a forEach step, which the
	// engine records when it evaluated the step's list: Input is then that
	// list, Activity the activity each element runs, and no task is sent
	// for the step itself. Its elements run as child steps
	// (ChildStepID); the engine ends the step with StepCompleted (output:
	// the children's outputs in element order) or StepFailed.
	ForEach *ForEachData `json:"forEach,omitempty"`
	// ChildRunID is set on the StepScheduled of a subPlan step: the child
	// run the attempt starts (ChildRunID), whose RunApproved the same
	// round appends. Input is then the child's input, and no task is sent.
	ChildRunID string `json:"childRunId,omitempty"`
}

// ForEachData describes the fan-out of a forEach step.
type ForEachData struct {
	// Count is the number of elements: one child step per element.
	Count int `json:"count"`
	// MaxParallel is how many children may be in flight at once.
	MaxParallel int `json:"maxParallel"`
	// FailFast reports that the first failed child stops the step.
	FailFast bool `json:"failFast"`
}

// StepStartedData is the payload of StepStarted.
type StepStartedData struct {
	// WorkerID identifies the worker that picked up the attempt.
	WorkerID string `json:"workerId,omitempty"`
	// StartedAt is when the worker began the attempt, by its clock, kept
	// between the attempt's StepScheduled and this event's emittedAt:
	// the attempt's start, which the event's own time is not when the
	// worker reported the start with the outcome (a short activity).
	// Absent from older events and engine-started steps; readers then use
	// the event's time.
	StartedAt time.Time `json:"startedAt,omitzero"`
}

// StartedTime returns when the attempt a StepStarted event e records
// began: its payload's StartedAt, or the event's time (persistedAt, else
// emittedAt) when the payload has none or does not decode.
func StartedTime(e Event) time.Time {
	var d StepStartedData
	if e.Data(&d) == nil && !d.StartedAt.IsZero() {
		return d.StartedAt
	}
	return eventTime(e)
}

// StepCompletedData is the payload of StepCompleted.
type StepCompletedData struct {
	// Output is the step's small JSON result, references only; anything
	// large goes in an artifact.
	Output json.RawMessage `json:"output,omitempty"`
	// Artifacts lists what the step produced.
	Artifacts []ArtifactRef `json:"artifacts"`
	// ReusedFrom is set on the completion a rerun copied from its source
	// run (RerunOf): the source's event, whose output and artifacts these
	// are. The step did not run in this run.
	ReusedFrom *EventRef `json:"reusedFrom,omitempty"`
}

// StepFailedData is the payload of StepFailed: the attempt failed and will
// not be retried by policy.
type StepFailedData struct {
	Error StepError `json:"error"`
}

// StepSkippedData is the payload of StepSkipped.
type StepSkippedData struct {
	Reason string `json:"reason"`
	// ReusedFrom is set on the skip a rerun copied from its source run, as
	// on StepCompletedData.
	ReusedFrom *EventRef `json:"reusedFrom,omitempty"`
}

// StepRetryScheduledData is the payload of StepRetryScheduled: the attempt
// failed with Error and logical attempt NextLogicalAttemptID will be
// scheduled at RetryAt.
type StepRetryScheduledData struct {
	Error                StepError `json:"error"`
	RetryAt              time.Time `json:"retryAt"`
	NextLogicalAttemptID string    `json:"nextLogicalAttemptId"`
}

// RunFailedData is the payload of RunFailed. StepID names the step whose
// failure failed the run, if one did; Error is the root cause when the
// engine knows it.
type RunFailedData struct {
	Reason string     `json:"reason"`
	StepID string     `json:"stepId,omitempty"`
	Error  *StepError `json:"error,omitempty"`
}

// RunCompletedData is the payload of RunCompleted: the run's output, when
// its plan has one (plan.Plan.Output). An older writer wrote no payload,
// and a run of a plan without an output has none.
type RunCompletedData struct {
	Output json.RawMessage `json:"output,omitempty"`
}

// RunCancelledData is the payload of RunCancelled.
type RunCancelledData struct {
	Reason string `json:"reason"`
}

// RunQueuedData is the payload of RunQueued: the admission limit that
// holds the run, as the engine found it when it queued the run.
type RunQueuedData struct {
	EnvironmentID string `json:"environmentId,omitempty"`
	// Running is how many of the environment's runs had started and not
	// ended; Limit is its MaxConcurrentRuns.
	Running int `json:"running,omitempty"`
	Limit   int `json:"limit,omitempty"`
	// Ahead is how many runs of the environment were queued before this
	// one: queued runs start first come, first served.
	Ahead int `json:"ahead,omitempty"`
	// Reason says the same in words, e.g. "2 of 2 running in environment
	// cust-1" (RunQueuedReason).
	Reason string `json:"reason,omitempty"`
	// Key, when a plan's concurrency limit holds the run rather than its
	// environment's, names the limit's key and the run's value of it
	// (`input.customerId = "42"`); Running, Limit and Ahead are then the
	// key's (RunQueuedKeyReason).
	Key string `json:"key,omitempty"`
}

// RunQueuedKeyReason is the Reason of a RunQueued held by a concurrency
// key with these counts.
func RunQueuedKeyReason(key string, running, limit, ahead int) string {
	r := fmt.Sprintf("%d of %d running for %s", running, limit, key)
	if ahead > 0 {
		r += fmt.Sprintf(", %d queued ahead", ahead)
	}
	return r
}

// RunQueuedReason is the Reason of a RunQueued with these counts.
func RunQueuedReason(environment string, running, limit, ahead int) string {
	r := fmt.Sprintf("%d of %d running in environment %s", running, limit, environment)
	if ahead > 0 {
		r += fmt.Sprintf(", %d queued ahead", ahead)
	}
	return r
}

// RunPausedData is the payload of RunPaused.
type RunPausedData struct {
	Reason string `json:"reason,omitempty"`
}

// SignalAcceptedData is the payload of SignalAccepted. Payload is the
// signal's own payload (at most 64 KiB, execution-semantics §6), no secrets.
type SignalAcceptedData struct {
	SignalName string          `json:"signalName"`
	SignalID   string          `json:"signalId"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	// ExpiresAt is when the gateway stopped (or stops) answering repeats of
	// this signal with this acceptance: its acceptedAt plus the signal
	// retention in force when it was accepted. A repeat after it is a new
	// signal, whatever the retention is by then. Zero in events written
	// before this field existed.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// SignalRejectedData is the payload of SignalRejected.
type SignalRejectedData struct {
	SignalName string `json:"signalName"`
	SignalID   string `json:"signalId"`
	Reason     string `json:"reason"`
}

// SignalAppliedData is the payload of SignalApplied: what the engine did
// with an accepted signal, or why it did nothing. Written by the
// engine, one per SignalAccepted it handled.
type SignalAppliedData struct {
	SignalID   string `json:"signalId"`
	SignalName string `json:"signalName"`
	// Outcome is SignalOutcomeApplied, SignalOutcomeBuffered or
	// SignalOutcomeIgnored.
	Outcome string `json:"outcome"`
	// Code is empty when applied and names the reason (SignalCode…
	// constants) when ignored.
	Code string `json:"code,omitempty"`
	// Reason says, for people, what the signal did or why it made no sense.
	Reason string `json:"reason"`
	// StepIDs lists the steps the signal acted on: the waitSignal steps it
	// completed (or, buffered, the ones that will wait for it), or the step
	// RETRY_STEP re-ran followed by the skipped dependants it brought back.
	StepIDs []string `json:"stepIds,omitempty"`
}

// Signal outcomes.
const (
	SignalOutcomeApplied = "applied"
	SignalOutcomeIgnored = "ignored"
	// SignalOutcomeBuffered: the signal names the waitSignal step(s) of
	// StepIDs, none of which waits yet. It is kept, with its payload, and
	// completes the first of them to wait for it (that StepCompleted
	// carries its id as causedBySignalId); a run that ends first drops it.
	SignalOutcomeBuffered = "buffered"
)

// Codes of ignored signals.
const (
	// SignalCodeRunTerminal: the run has already completed, failed or been
	// cancelled.
	SignalCodeRunTerminal = "RUN_TERMINAL"
	// SignalCodeRunNotStarted: the run is not approved yet, or a CANCEL
	// overtook the signal before the run started (an approved run takes
	// its other signals when it starts).
	SignalCodeRunNotStarted = "RUN_NOT_STARTED"
	// SignalCodeRunNotRunning: PAUSE on a run that is not RUNNING.
	SignalCodeRunNotRunning = "RUN_NOT_RUNNING"
	// SignalCodeRunNotPaused: RESUME on a run that is not PAUSED.
	SignalCodeRunNotPaused = "RUN_NOT_PAUSED"
	// SignalCodeBadPayload: the payload is not what the signal needs (RETRY_STEP
	// wants {"stepId": "…"}; a waitSignal payload must be JSON).
	SignalCodeBadPayload = "BAD_PAYLOAD"
	// SignalCodeUnknownStep: RETRY_STEP names a step the plan does not have.
	SignalCodeUnknownStep = "UNKNOWN_STEP"
	// SignalCodeStepNotFailed: RETRY_STEP names a step that is not FAILED.
	SignalCodeStepNotFailed = "STEP_NOT_FAILED"
	// SignalCodeUnknownSignal: no step of the plan waits for a signal of this name.
	SignalCodeUnknownSignal = "UNKNOWN_SIGNAL"
	// SignalCodeNotWaiting: steps wait for this name, but none is waiting now.
	SignalCodeNotWaiting = "NOT_WAITING"
)

// MalformedEventError reports an event the reducer cannot apply: its
// eventData does not decode into the payload of its type, or a required
// envelope field is missing. Err holds the cause and is returned by Unwrap.
type MalformedEventError struct {
	RunID  string
	RunSeq int64
	Type   Type
	Err    error
}

// Error implements error.
func (e *MalformedEventError) Error() string {
	return fmt.Sprintf("events: malformed %s event at runSeq %d of run %s: %v", e.Type, e.RunSeq, e.RunID, e.Err)
}

// Unwrap returns the cause.
func (e *MalformedEventError) Unwrap() error { return e.Err }

// Data decodes the event's eventData into v, which must be a non-nil
// pointer, usually to the payload struct of the event's type. *v is reset
// to its zero value first, so fields absent from the data are zero, and
// empty or JSON null data leaves *v zero. Unknown fields are ignored
// (additive evolution). Data that does not decode into v yields a
// *MalformedEventError naming the run, runSeq and type.
func (e Event) Data(v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("events: Data needs a non-nil pointer, got %T", v)
	}
	rv.Elem().SetZero()
	if len(e.EventData) == 0 {
		return nil
	}
	if err := json.Unmarshal(e.EventData, v); err != nil {
		return e.malformed(err)
	}
	return nil
}

// malformed wraps err in a *MalformedEventError for e.
func (e Event) malformed(err error) *MalformedEventError {
	return &MalformedEventError{RunID: e.RunID, RunSeq: e.RunSeq, Type: e.EventType, Err: err}
}

// errMissingStepID is the cause given when a step event has no stepId.
var errMissingStepID = errors.New("step event has no stepId")

// MarshalData encodes v as an eventData payload. A nil v gives nil data,
// which the envelope omits.
func MarshalData(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("events: marshal event data %T: %w", v, err)
	}
	return b, nil
}
