package task

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/weftrun/weft/pkg/events"
)

// This file holds the messages and the record of activity result
// reconciliation (docs/reconciliation.md; tier0 contract, "Activity Result
// Reconciliation"). A keyed attempt, one whose activity has an idempotency
// key from the plan step or derived by the worker from the input, gets a
// durable reconciliation record, written by the engine in the transaction
// of the attempt's terminal event. A worker that takes an attempt which
// may have run before asks the engine for that record over NATS
// request-reply (ReconcileRequest, ReconcileReply) before it runs the
// activity again.

// RecordVersion is the version of the ReconcileRecord this package
// writes. Readers accept any version up to theirs.
const RecordVersion = 1

// ReconcileStatus is the outcome a reconciliation record holds.
type ReconcileStatus string

// The statuses of a reconciliation record.
const (
	// StatusCompleted: the side effect completed. The record has a Result
	// when the result is available; without one (the verifier could not
	// reconstruct it, or the engine refused the output) the step failed
	// with the record's Error, and the attempt is never run again.
	StatusCompleted ReconcileStatus = "completed"
	// StatusFailed: the attempt failed, before any side effect as far as
	// the activity knows.
	StatusFailed ReconcileStatus = "failed"
	// StatusCancelled: the run was cancelled while the attempt was in
	// flight, before any completion was recorded.
	StatusCancelled ReconcileStatus = "cancelled"
	// StatusTimedOut: the attempt ran out of time.
	StatusTimedOut ReconcileStatus = "timed-out"
	// StatusIndeterminate: the attempt failed after a possible side effect,
	// or reconciliation could not tell whether the side effect happened.
	StatusIndeterminate ReconcileStatus = "indeterminate"
)

// Known reports whether s is one of the five statuses.
func (s ReconcileStatus) Known() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusTimedOut, StatusIndeterminate:
		return true
	}
	return false
}

// How a final result was reconciled instead of executed
// (ResultReconcile.ReconciledBy).
const (
	// ReconciledByRecord: the worker found the engine's durable record
	// and reported it without running the activity.
	ReconciledByRecord = "record"
	// ReconciledByVerify: the activity's verify hook reported the side
	// effect's state; the activity did not run.
	ReconciledByVerify = "verify"
)

// Error codes of reconciliation failures, in the StepError of a StepFailed
// result, category CategoryReconciliation. They are stable: retry policies
// and operators match on them.
const (
	// CodeReconciliationResultUnavailable: the side effect completed but
	// its result cannot be reconstructed. Not retryable: running the
	// activity again would repeat the side effect.
	CodeReconciliationResultUnavailable = "RECONCILIATION_RESULT_UNAVAILABLE"
	// CodeReconciliationIndeterminate: the verifier could not tell whether
	// the side effect completed, failed, or could not be reached, or the
	// engine's record could not be read. Retryable: the step's retry policy
	// bounds it, and the next attempt reconciles again.
	CodeReconciliationIndeterminate = "RECONCILIATION_INDETERMINATE"
	// CodeReconciliationContradiction: the verifier's answer is malformed
	// or contradicts a durable record. Not retryable: Weft fails closed
	// rather than choose a result; the record's diagnostics say why.
	CodeReconciliationContradiction = "RECONCILIATION_CONTRADICTION"
	// CategoryReconciliation groups the three codes.
	CategoryReconciliation = "RECONCILIATION"
)

// OperationID returns the reconciliation operation id of one logical
// attempt of a step: "<stepId>#<logicalAttemptId>". It is deterministic, so
// the engine and every worker compute the same id for every delivery of
// the attempt, and unambiguous, because a logical attempt id is a decimal
// and holds no '#'. Each logical attempt is its own operation: a retry is
// a new operation that reconciles against the external system (verify),
// not against the failed attempt's record.
func OperationID(stepID, logicalAttemptID string) string {
	return stepID + "#" + logicalAttemptID
}

// StepOfOperation splits an operation id into its step id and logical
// attempt id; ok is false when id has no '#'.
func StepOfOperation(id string) (stepID, logicalAttemptID string, ok bool) {
	i := strings.LastIndexByte(id, '#')
	if i < 0 {
		return "", "", false
	}
	return id[:i], id[i+1:], true
}

// ResultReconcile is what a keyed attempt's Result says about
// reconciliation. A Result without it is of an unkeyed attempt, or from a
// worker that predates reconciliation.
type ResultReconcile struct {
	// OperationID is OperationID(stepId, logicalAttemptId).
	OperationID string `json:"operationId"`
	// IdempotencyKey is the activity-level key the worker used: the
	// task's, or the one its activity derived from the input.
	IdempotencyKey string `json:"idempotencyKey"`
	// Status is the record status a final result asks for: completed on
	// StepCompleted; on StepFailed failed, cancelled, timed-out,
	// indeterminate (a failure after a possible side effect), or completed
	// (the side effect completed, its result is unavailable). Empty on
	// StepStarted; on a final result it means completed or failed by kind.
	Status ReconcileStatus `json:"status,omitempty"`
	// ReconciledBy is set when the activity did not run: ReconciledByRecord
	// or ReconciledByVerify.
	ReconciledBy string `json:"reconciledBy,omitempty"`
	// Diagnostics hold what an operator needs to understand a
	// reconciliation failure (verify state, record found, contradiction).
	Diagnostics map[string]string `json:"diagnostics,omitempty"`
}

// ReconcileResult is a completed activity's result as a record keeps it.
type ReconcileResult struct {
	Output    json.RawMessage      `json:"output,omitempty"`
	Artifacts []events.ArtifactRef `json:"artifacts,omitempty"`
}

// ReconcileRecord is the durable reconciliation record of one keyed
// operation, unique by (RunID, ActivityName, OperationID, IdempotencyKey).
// The engine writes it in the transaction of the attempt's terminal event
// (StepCompleted, StepFailed, StepRetryScheduled, or RunCancelled for an
// attempt in flight) and never changes it: the first outcome wins, as in
// the event log. It is persisted (Postgres, activity_reconciliations) and
// sent to workers in ReconcileReply.
type ReconcileRecord struct {
	Version          int             `json:"version"`
	RunID            string          `json:"runId"`
	ActivityName     string          `json:"activityName"`
	OperationID      string          `json:"operationId"`
	IdempotencyKey   string          `json:"idempotencyKey"`
	StepID           string          `json:"stepId"`
	LogicalAttemptID string          `json:"logicalAttemptId"`
	Status           ReconcileStatus `json:"status"`
	// Result is set only when Status is completed and the result is
	// available.
	Result *ReconcileResult `json:"result,omitempty"`
	// Error is set when the attempt ended unsuccessfully (every status but
	// completed with a result).
	Error *events.StepError `json:"error,omitempty"`
	// ReconciledBy says the outcome was reconciled, not executed
	// (ReconciledByRecord, ReconciledByVerify).
	ReconciledBy string            `json:"reconciledBy,omitempty"`
	Diagnostics  map[string]string `json:"diagnostics,omitempty"`
	// CreatedAt is the operation's first accepted dispatch: the time of the
	// attempt's StepScheduled. UpdatedAt is the time of the round that
	// wrote the record.
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ReconcileRequest asks the engine for the record of one operation. A
// worker sends it as a core NATS request on ReconcileSubject
// (streams.ReconcileSubject) and waits for a ReconcileReply.
type ReconcileRequest struct {
	SchemaVersion  int    `json:"schemaVersion"`
	RunID          string `json:"runId"`
	ActivityName   string `json:"activityName"`
	OperationID    string `json:"operationId"`
	IdempotencyKey string `json:"idempotencyKey"`
	// Token is the Token of the task whose attempt asks, unchanged: the
	// engine answers only a lookup whose token it signed for RunID and
	// the step and logical attempt of OperationID.
	Token string `json:"token,omitempty"`
}

// ReconcileReply answers a ReconcileRequest.
type ReconcileReply struct {
	SchemaVersion int `json:"schemaVersion"`
	// Record is the operation's record, nil when none exists.
	Record *ReconcileRecord `json:"record,omitempty"`
	// Prior is the most recently updated record of the same run, activity
	// and idempotency key under another operation (an earlier attempt or
	// another step), nil when none exists. A verifier that reports
	// not-completed while Prior is completed contradicts a durable record.
	Prior *ReconcileRecord `json:"prior,omitempty"`
	// Started is set when the operation has no Record but the run's log
	// holds the StepStarted of its logical attempt with the same activity
	// key: a delivery began the attempt, may have run the activity, and
	// its outcome is not recorded. A worker must then treat the attempt as
	// possibly run (verify, or fail as indeterminate), never as "no
	// record". An engine that predates it never sets it.
	Started *ReconcileStarted `json:"started,omitempty"`
	// Error is set when the engine could not answer (a bad request, the
	// database unreachable); the worker must then treat the lookup as
	// unavailable, never as "no record".
	Error string `json:"error,omitempty"`
}

// ReconcileStarted is the StepStarted of a keyed attempt, as the run's log
// holds it, in a ReconcileReply.
type ReconcileStarted struct {
	StepID           string `json:"stepId"`
	LogicalAttemptID string `json:"logicalAttemptId"`
	// EngineAttemptID and WorkerID name the delivery that began the
	// attempt, as it reported itself.
	EngineAttemptID string `json:"engineAttemptId,omitempty"`
	WorkerID        string `json:"workerId,omitempty"`
	// StartedAt is when the engine persisted the StepStarted.
	StartedAt time.Time `json:"startedAt"`
}
