// Package api holds the wire types of Weft's signal gateway: the bodies of
// its REST and JSON-RPC requests and responses (runs and signals here,
// schedules and triggers in schedule.go), its error shape and error
// codes. The gateway (services/signal-gateway) and the Go client
// (pkg/client) share them, so the two cannot drift apart. docs/api.md
// describes the endpoints; /openapi.json is the machine-readable form.
//
// These are persisted-format-adjacent types: fields may be added, never
// renamed or removed.
package api

import (
	"encoding/json"
	"time"
)

// StartRunRequest starts a run of a plan (POST /v1/runs, JSON-RPC
// run.start, NATS weft.runs.start). Starts are idempotent on
// (TenantID, ProjectID, EnvironmentID, PlanID, PlanVersion, RunRequestID):
// a repeat returns the first start's run and starts nothing
// (execution-semantics §3).
type StartRunRequest struct {
	TenantID      string `json:"tenantId"`
	ProjectID     string `json:"projectId"`
	EnvironmentID string `json:"environmentId"`
	// PlanID and PlanVersion must equal the plan's own. A start by
	// PlanRef may leave them out; when given they must equal the
	// resolved version's.
	PlanID      string `json:"planId"`
	PlanVersion string `json:"planVersion"`
	// RunRequestID is the caller's id for this start. Optional: a request
	// without one is given a fresh id and is not idempotent across
	// retries; one sent empty ("") is refused. The Go client always sends
	// one.
	RunRequestID string `json:"runRequestId,omitempty"`
	// Plan is the plan document (a JSON object; see pkg/plan). A start
	// carries Plan or PlanRef, never both.
	Plan json.RawMessage `json:"plan,omitempty"`
	// PlanRef names a version of a registered plan (POST /v1/plans) of
	// the start's tenant and project instead of carrying Plan; it is
	// resolved when the start is taken in, and the run records the full
	// plan of the version it resolved to.
	PlanRef *PlanRef `json:"planRef,omitempty"`
	// Input is the run's input document: any JSON value, references only.
	Input json.RawMessage `json:"input,omitempty"`
	// Labels are the run's labels, within the limits CheckLabels holds
	// (MaxLabels, MaxLabelKeyBytes, MaxLabelValueBytes); the runs list
	// filters by them (GET /v1/runs?label=KEY=VALUE).
	Labels map[string]string `json:"labels,omitempty"`
	// Priority is the run's admission priority, MinPriority to
	// MaxPriority; zero means DefaultPriority. Where a concurrency or
	// environment limit queues runs, higher priorities start first, first
	// come first served within one (docs/flow-control.md).
	Priority int `json:"priority,omitempty"`
}

// The admission priorities of a start (StartRunRequest.Priority).
const (
	MinPriority     = 1
	MaxPriority     = 5
	DefaultPriority = 3
)

// EffectivePriority is p, or DefaultPriority for zero.
func EffectivePriority(p int) int {
	if p == 0 {
		return DefaultPriority
	}
	return p
}

// StartRunResult answers a start: 201 for a new run, 200 with Duplicate
// for a repeat of an earlier start.
type StartRunResult struct {
	RunID        string `json:"runId"`
	RunRequestID string `json:"runRequestId"`
	// Status is the run's status when the answer was made (pkg/events
	// RunStatus: APPROVED for a new run).
	Status    string `json:"status"`
	Duplicate bool   `json:"duplicate"`
}

// SignalRequest sends a signal to a run (POST /v1/runs/{runId}/signals).
// Over JSON-RPC (signal.send) and NATS the run is named by WorkflowID.
type SignalRequest struct {
	// WorkflowID is the run id. REST takes it from the path instead and
	// rejects a body that carries it.
	WorkflowID string `json:"workflowId,omitempty"`
	// SignalName is case-sensitive: PAUSE, RESUME, CANCEL, RETRY_STEP or a
	// name a waitSignal step waits for.
	SignalName string `json:"signalName"`
	// SignalID makes retries idempotent: a repeat of (run, SignalName,
	// SignalID) returns the first acceptance and enqueues nothing. Optional:
	// without it the gateway generates a fresh id per request. At most 128
	// UTF-8 bytes, case-sensitive, never trimmed or normalised.
	SignalID string `json:"signalId,omitempty"`
	// Payload is the signal's payload, any JSON value, at most 64 KiB by
	// default.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// AcceptedSignalResult is the canonical, transport-independent record of an
// accepted signal (tier0 contract, "Signal Idempotency"). A duplicate
// request gets the first request's result, wrapped in its own transport's
// envelope.
type AcceptedSignalResult struct {
	Accepted   bool      `json:"accepted"`
	WorkflowID string    `json:"workflowId"`
	SignalName string    `json:"signalName"`
	SignalID   string    `json:"signalId"`
	AcceptedAt time.Time `json:"acceptedAt"`
	// SignalStorageKey names the accepted payload: the SignalAccepted
	// event's logicalAttemptId in the run's log.
	SignalStorageKey string `json:"signalStorageKey"`
}

// ErrorBody is the one error shape of every HTTP answer and NATS reply:
// {"error": {...}}.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Error is a Weft error: a stable Code, a message for people and details
// for programs. Over JSON-RPC it is the error object's data.
type Error struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Error codes. They are stable: programs branch on them.
const (
	// CodeInvalidArgument: the request is malformed or breaks a rule; the
	// details say which field and why. HTTP 400, JSON-RPC -32602.
	CodeInvalidArgument = "InvalidArgument"
	// CodeUnsupportedMediaType: the body is not application/json. HTTP 415.
	CodeUnsupportedMediaType = "UnsupportedMediaType"
	// CodePayloadTooLarge: the body or the signal payload is over its
	// limit. HTTP 413.
	CodePayloadTooLarge = "PayloadTooLarge"
	// CodeUnauthenticated: no API key, or one the gateway does not know.
	// HTTP 401. Nothing is recorded.
	CodeUnauthenticated = "Unauthenticated"
	// CodePermissionDenied: the key's role may not do this. HTTP 403. A
	// denied signal is recorded as SignalRejected.
	CodePermissionDenied = "PermissionDenied"
	// CodeNotFound: no such run, schedule or trigger, or one of another
	// tenant. HTTP 404.
	CodeNotFound = "NotFound"
	// CodeRateLimited: too many signals for this run, or too many
	// requests from this API key (details.keyId); details.retryAfter says
	// when to try again. HTTP 429.
	CodeRateLimited = "RateLimited"
	// CodeOverloaded: the environment is at its limit of concurrent runs
	// under the REJECT policy; details.retryAfter says when to try again.
	// HTTP 429.
	CodeOverloaded = "Overloaded"
	// CodeSignalAcceptanceIndeterminate: the signal's payload is in the
	// log but its acceptance record is not, so the gateway cannot tell
	// whether this is a repeat. Retry only after an operator has looked,
	// or after the retention has passed. HTTP 409, JSON-RPC CodeConflict.
	CodeSignalAcceptanceIndeterminate = "SignalAcceptanceIndeterminate"
	// CodeAlreadyExists: a schedule or trigger of that id exists with
	// another definition (a create repeating the same definition is
	// answered with the existing one instead). HTTP 409, JSON-RPC
	// CodeConflict.
	CodeAlreadyExists = "AlreadyExists"
	// CodeQuotaExceeded: the tenant has its quota of schedules or
	// triggers (details.resource, details.limit); nothing was written.
	// Delete one, or have the operator raise the quota, before creating
	// another; waiting does not help. HTTP 409, JSON-RPC CodeConflict.
	CodeQuotaExceeded = "QuotaExceeded"
	// CodeRunTerminal: a signal to a run that has ended (COMPLETED, FAILED
	// or CANCELLED; details.status), which takes no more signals, but
	// RETRY_STEP on a FAILED run. HTTP 409, JSON-RPC -32009 (conflict).
	// Nothing is written.
	CodeRunTerminal = "RunTerminal"
	// CodeIdempotencyConflict: a start repeats the runRequestId of an
	// earlier start, still retained, with another plan or input (or a
	// trigger event repeats its eventId with another payload);
	// details.runId names the earlier start's run. Nothing is written.
	// Send the first request again to get its run, or the new one under
	// an id of its own. HTTP 409, JSON-RPC -32009 (conflict).
	CodeIdempotencyConflict = "IdempotencyConflict"
	// CodeUnknownSignal: a signal name that is neither a control signal
	// nor one a waitSignal step of the run's plan waits for;
	// details.accepts lists those it takes. HTTP 400, JSON-RPC -32602.
	// Nothing is written.
	CodeUnknownSignal = "UnknownSignal"
	// CodePlanVersionConflict: a push of a registered plan's
	// planId@planVersion that is stored with another plan document
	// (details.planId, details.planVersion, details.digest: the stored
	// one's). Versions are immutable: push the change as a new
	// planVersion. Nothing is written. HTTP 409, JSON-RPC -32009
	// (conflict).
	CodePlanVersionConflict = "PlanVersionConflict"
	// CodePlanArchived: a start names (by planRef) a registered plan
	// version that is archived; restore it, or start another version.
	// Nothing is written. HTTP 409, JSON-RPC -32009 (conflict).
	CodePlanArchived = "PlanArchived"
	// CodeRerunRefused: a rerun of a run that has not ended
	// (details.status), or whose step to reuse has no outcome to copy in
	// the source run's log: it did not succeed or was not skipped there
	// (details.stepId, details.status), or retention removed the source's
	// events. Nothing is written. HTTP 409, JSON-RPC -32009 (conflict).
	CodeRerunRefused = "RerunRefused"
	// CodeMethodNotAllowed: the path exists, the method does not. HTTP 405.
	CodeMethodNotAllowed = "MethodNotAllowed"
	// CodeInternal: a fault of the gateway or its database; retrying with
	// the same ids is safe. HTTP 500.
	CodeInternal = "Internal"
	// CodeUnavailable: the gateway is shutting down or the database is
	// unreachable; retrying with the same ids is safe. HTTP 503.
	CodeUnavailable = "Unavailable"
)

// Limits of the wire format, named so callers can check before sending.
const (
	// MaxSignalIDBytes is the longest signalId, in UTF-8 bytes.
	MaxSignalIDBytes = 128
	// MaxSignalNameBytes is the longest signal name, in UTF-8 bytes.
	MaxSignalNameBytes = 128
)

// RerunRequest starts a new run of a run's plan version from one of its
// steps (POST /v1/runs/{runId}/rerun, JSON-RPC run.rerun; docs/api.md,
// "Rerun from a step"): FromStepID and its descendants run anew, with
// Input when it is given (else the source run's input), and every other
// step's outcome in the source run is copied in. The answer is the new
// run's StartRunResult; a repeat of RunRequestID with the same request
// answers its run, marked duplicate.
type RerunRequest struct {
	// RunID is the source run. REST takes it from the path instead and
	// refuses a body that carries it.
	RunID        string          `json:"runId,omitempty"`
	FromStepID   string          `json:"fromStepId"`
	Input        json.RawMessage `json:"input,omitempty"`
	RunRequestID string          `json:"runRequestId,omitempty"`
}
