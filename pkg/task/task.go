// Package task is the wire protocol between the engine and activity
// workers: the Task the engine dispatches on weft.tasks.<queue>, the Result
// messages a worker reports on weft.results.<runId>, and the Cancel notice
// the engine sends when a run is cancelled. Messages are plain JSON so that
// a worker in any language can speak the protocol; docs/worker-protocol.md
// describes it without reference to Go.
//
// Workers never touch Postgres. The engine appends every result to the
// event log in one of its rounds; a result is keyed by the idempotency key
// of the event it becomes, so a result reported twice (a worker retrying a
// publish, or a redelivered task run again) is recorded once.
package task

import (
	"encoding/json"
	"time"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// SchemaVersion is the version of the messages this package writes.
// Readers accept messages of any version up to theirs and ignore fields
// they do not know.
const SchemaVersion = 1

// Task asks a worker to run one logical attempt of one activity step. It
// is published with Nats-Msg-Id = DedupeID(RunID, StepID, LogicalAttemptID)
// and stays in the stream until a worker acks it; JetStream redelivers it
// after the queue consumer's AckWait without a heartbeat (not the step's
// timeout, which the worker enforces) to any worker of the queue, with a
// higher delivery count, which is the attempt's engineAttemptId.
type Task struct {
	SchemaVersion int    `json:"schemaVersion"`
	RunID         string `json:"runId"`
	// TenantID is the tenant of the run: what a worker scopes the task's
	// secrets and its fair share of the queue by. Empty from an engine
	// that predates it.
	TenantID         string `json:"tenantId,omitempty"`
	StepID           string `json:"stepId"`
	LogicalAttemptID string `json:"logicalAttemptId"`
	PlanVersion      string `json:"planVersion"`
	// Activity is the registered name of the activity to run.
	Activity string `json:"activity"`
	// Queue is the task queue the task was published on.
	Queue string `json:"queue"`
	// Input is the step's input; secret references, never values.
	Input json.RawMessage `json:"input,omitempty"`
	// Secrets are the references the activity may resolve.
	Secrets []plan.SecretRef `json:"secrets,omitempty"`
	// IdempotencyKey is the activity-level key for the side effect: the
	// step's own key from the plan when it has one, otherwise a key derived
	// from the run, step and logical attempt. It is the same for every
	// delivery of the attempt.
	IdempotencyKey string `json:"idempotencyKey"`
	// TimeoutMillis bounds one attempt; a worker stops the activity then.
	TimeoutMillis int64 `json:"timeoutMs"`
	// ScheduledAt is when the engine scheduled the attempt.
	ScheduledAt time.Time `json:"scheduledAt"`
	// OperationID is set, to OperationID(StepID, LogicalAttemptID), only
	// when the plan step has its own idempotencyKey: the attempt is keyed
	// and reconciled (docs/reconciliation.md). An attempt is also keyed
	// when the worker's activity derives its key from the input. Empty
	// from an engine that predates reconciliation.
	OperationID string `json:"operationId,omitempty"`
	// FencingToken increases with every logical attempt of the step (it is
	// the logical attempt number), so an external system that remembers
	// the highest token it accepted for a resource can refuse a stale
	// attempt's write. Every delivery and re-send of one logical attempt
	// carries the same token. Zero from an engine that predates it.
	FencingToken uint64 `json:"fencingToken,omitempty"`
	// Resend marks a task the engine's sweep sent again for an attempt that
	// looked lost: the activity may have run already, though the message's
	// delivery count starts again at 1.
	Resend bool `json:"resend,omitempty"`
	// Token is the engine's signature of the attempt (RunID, StepID,
	// LogicalAttemptID; Signer). A worker copies it unchanged into every
	// Result and ReconcileRequest of the task, and the engine refuses
	// those without it. Empty from an engine that predates it.
	Token string `json:"token,omitempty"`
}

// Timeout returns the attempt's timeout as a duration.
func (t Task) Timeout() time.Duration { return time.Duration(t.TimeoutMillis) * time.Millisecond }

// Kind is what a Result reports.
type Kind string

// The result kinds; each becomes the event of the same name.
const (
	Started   Kind = Kind(events.StepStarted)
	Completed Kind = Kind(events.StepCompleted)
	Failed    Kind = Kind(events.StepFailed)
)

// Result is a worker's report on one delivery of a Task. It is published on
// weft.results.<runId> with Nats-Msg-Id = MsgID(): its idempotency key
// bound to its task's token.
type Result struct {
	SchemaVersion    int    `json:"schemaVersion"`
	Kind             Kind   `json:"kind"`
	RunID            string `json:"runId"`
	StepID           string `json:"stepId"`
	LogicalAttemptID string `json:"logicalAttemptId"`
	// EngineAttemptID is the task's JetStream delivery count, as a decimal
	// string: 1 for the first delivery.
	EngineAttemptID string `json:"engineAttemptId"`
	// IdempotencyKey is the key of the event this result becomes:
	// events.IdempotencyKey(RunID, StepID, LogicalAttemptID, Kind,
	// PlanVersion). The same for every delivery of the attempt.
	IdempotencyKey string `json:"idempotencyKey"`
	WorkerID       string `json:"workerId,omitempty"`
	// Output and Artifacts are set on Completed.
	Output    json.RawMessage      `json:"output,omitempty"`
	Artifacts []events.ArtifactRef `json:"artifacts,omitempty"`
	// Error is set on Failed.
	Error *events.StepError `json:"error,omitempty"`
	// EmittedAt is when the worker observed what it reports.
	EmittedAt time.Time `json:"emittedAt"`
	// StartedAt is when the worker began the attempt (by its clock), on
	// every kind: the engine records it as the attempt's start, since a
	// short activity reports its StepStarted only with its outcome.
	// Optional: absent, the engine's round time stands.
	StartedAt time.Time `json:"startedAt,omitzero"`
	// Reconcile is set on the results of a keyed attempt
	// (docs/reconciliation.md).
	Reconcile *ResultReconcile `json:"reconcile,omitempty"`
	// Token is the Token of the task the result answers, unchanged. The
	// engine drops a result whose token it did not sign for the result's
	// run, step and logical attempt.
	Token string `json:"token,omitempty"`
}

// NewResult returns the Result of kind for t's attempt, with its
// idempotency key, t's Token and EmittedAt set to now.
func NewResult(t Task, kind Kind, engineAttemptID, workerID string) Result {
	return Result{
		SchemaVersion:    SchemaVersion,
		Kind:             kind,
		RunID:            t.RunID,
		StepID:           t.StepID,
		LogicalAttemptID: t.LogicalAttemptID,
		EngineAttemptID:  engineAttemptID,
		IdempotencyKey:   events.IdempotencyKey(t.RunID, t.StepID, t.LogicalAttemptID, events.Type(kind), t.PlanVersion),
		WorkerID:         workerID,
		EmittedAt:        time.Now().UTC(),
		Token:            t.Token,
	}
}

// Cancel tells the workers of a run to stop its in-flight activities and
// not to start its queued ones. The engine writes it to its outbox in the
// round that cancels the run, and the relay publishes it on
// weft.cancel.<runId>, where the stream WEFT_CANCELS keeps it: a running
// worker hears it as it is published, and a worker about to start an
// attempt looks it up (docs/worker-protocol.md, "Cancellation"). The
// engine sends at most one notice per run (RunCancelled ends the run), so
// the last message on the subject is the run's notice.
type Cancel struct {
	SchemaVersion int    `json:"schemaVersion"`
	RunID         string `json:"runId"`
	// StepIDs lists the steps to stop; empty means every step of the run.
	StepIDs []string `json:"stepIds,omitempty"`
	Reason  string   `json:"reason"`
	// Attempts maps a step of StepIDs to the logical attempt (a decimal,
	// as Task.LogicalAttemptID) that was in flight when the run was
	// cancelled: that attempt and earlier ones are cancelled, a later one
	// is not. A step of StepIDs it does not name has every attempt
	// cancelled. Empty from an engine that predates it.
	Attempts map[string]string `json:"attempts,omitempty"`
}

// DedupeID returns the Nats-Msg-Id of the task of one logical attempt:
// "<runId>/<stepId>/<logicalAttemptId>". A run id (a UUID) and a logical
// attempt id (a decimal) contain no '/', so the step id is everything
// between the first and the last '/', and the id is unambiguous.
func DedupeID(runID, stepID, logicalAttemptID string) string {
	return runID + "/" + stepID + "/" + logicalAttemptID
}
