package round

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// This file holds the activity reconciliation records
// (docs/reconciliation.md): the rounds write them, in the transaction of
// the terminal events that explain them, and the engine's lookup serves
// them to workers.

// ReconciliationInsertTx writes records in tx, in one round trip, in the
// transaction of the round whose events they belong to. A record is never
// changed once written: a second record for the same (run, activity,
// operation, key) is dropped, as the event log keeps an attempt's first
// outcome.
func ReconciliationInsertTx(ctx context.Context, tx pgx.Tx, records []task.ReconcileRecord) error {
	b := &pgx.Batch{}
	if err := queueReconciliations(b, records); err != nil {
		return err
	}
	return tx.SendBatch(ctx, b).Close()
}

// queueReconciliations queues on b the inserts ReconciliationInsertTx
// makes. An error of an insert is b's.
func queueReconciliations(b *pgx.Batch, records []task.ReconcileRecord) error {
	for _, r := range records {
		args, err := reconciliationArgs(r)
		if err != nil {
			return fmt.Errorf("round: run %s: reconciliation record of %s: %w", r.RunID, r.OperationID, err)
		}
		b.Queue(`
			INSERT INTO activity_reconciliations (run_id, activity_name, operation_id, idempotency_key, version,
				step_id, logical_attempt, status, result, error, reconciled_by, diagnostics, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
			ON CONFLICT (run_id, activity_name, operation_id, idempotency_key) DO NOTHING`, args...)
	}
	return nil
}

// reconciliationArgs returns the insert's arguments for r.
func reconciliationArgs(r task.ReconcileRecord) ([]any, error) {
	attempt, err := strconv.Atoi(r.LogicalAttemptID)
	if err != nil {
		return nil, fmt.Errorf("logical attempt %q: %w", r.LogicalAttemptID, err)
	}
	result, err := reconcileJSON(r.Result)
	if err != nil {
		return nil, err
	}
	stepErr, err := reconcileJSON(r.Error)
	if err != nil {
		return nil, err
	}
	var diagnostics []byte
	if len(r.Diagnostics) > 0 {
		if diagnostics, err = json.Marshal(r.Diagnostics); err != nil {
			return nil, err
		}
	}
	return []any{r.RunID, r.ActivityName, r.OperationID, r.IdempotencyKey, r.Version, r.StepID, attempt,
		string(r.Status), result, stepErr, r.ReconciledBy, diagnostics, r.CreatedAt, r.UpdatedAt}, nil
}

// reconcileJSON encodes v, or returns nil (SQL NULL) for a nil pointer.
func reconcileJSON[T any](v *T) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	return json.Marshal(v)
}

// ReconciliationQuerier is what ReconciliationGet reads through: a pool, a
// connection or a transaction.
type ReconciliationQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ErrBadLookup reports a ReconcileRequest that names no operation: a run
// id that is not a canonical UUID, or an empty activity, operation or key.
var ErrBadLookup = errors.New("round: bad reconciliation lookup")

// ReconciliationGet answers a worker's lookup: the record of the request's
// operation and the most recently updated record of the same run,
// activity and key under another operation (task.ReconcileReply.Prior),
// each nil when there is none; and, when the operation has no record, the
// StepStarted the log holds of its logical attempt with the same activity
// key (task.ReconcileReply.Started), nil when there is none. It fails with ErrBadLookup for a request
// that names no operation, and with the database's error otherwise; it
// never reports "no record" for a lookup it could not make.
func ReconciliationGet(ctx context.Context, q ReconciliationQuerier, req task.ReconcileRequest) (task.ReconcileReply, error) {
	reply := task.ReconcileReply{SchemaVersion: task.SchemaVersion}
	if req.ActivityName == "" || req.OperationID == "" || req.IdempotencyKey == "" {
		return reply, fmt.Errorf("%w: activityName, operationId and idempotencyKey are required", ErrBadLookup)
	}
	if _, err := events.ParseRunID(req.RunID); err != nil {
		return reply, fmt.Errorf("%w: %w", ErrBadLookup, err)
	}
	var err error
	reply.Record, err = reconciliationRow(ctx, q, `
		SELECT `+reconciliationColumns+` FROM activity_reconciliations
		WHERE run_id = $1 AND activity_name = $2 AND operation_id = $3 AND idempotency_key = $4`,
		req.RunID, req.ActivityName, req.OperationID, req.IdempotencyKey)
	if err != nil {
		return reply, err
	}
	reply.Prior, err = reconciliationRow(ctx, q, `
		SELECT `+reconciliationColumns+` FROM activity_reconciliations
		WHERE run_id = $1 AND activity_name = $2 AND operation_id <> $3 AND idempotency_key = $4
		ORDER BY updated_at DESC, operation_id DESC LIMIT 1`,
		req.RunID, req.ActivityName, req.OperationID, req.IdempotencyKey)
	if err != nil || reply.Record != nil {
		return reply, err
	}
	reply.Started, err = startedRow(ctx, q, req)
	return reply, err
}

// startedRow reads the first StepStarted of req's logical attempt whose
// activity key (the payload's activityKey, written for a keyed attempt
// only) is req's, or nil when the log has none. The key is matched, not
// assumed: an attempt started under another key is another operation.
func startedRow(ctx context.Context, q ReconciliationQuerier, req task.ReconcileRequest) (*task.ReconcileStarted, error) {
	step, attempt, ok := task.StepOfOperation(req.OperationID)
	if !ok {
		return nil, nil // no logical attempt: no StepStarted can match
	}
	s := task.ReconcileStarted{StepID: step, LogicalAttemptID: attempt}
	err := q.QueryRow(ctx, `
		SELECT coalesce(engine_attempt_id, ''), coalesce(event_data->>'workerId', ''), persisted_at
		FROM run_events
		WHERE run_id = $1 AND event_type = $2 AND step_id = $3 AND logical_attempt_id = $4
			AND event_data->>'activityKey' = $5
		ORDER BY run_seq LIMIT 1`,
		req.RunID, string(events.StepStarted), step, attempt, req.IdempotencyKey,
	).Scan(&s.EngineAttemptID, &s.WorkerID, &s.StartedAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("round: read the attempt's StepStarted: %w", err)
	}
	s.StartedAt = s.StartedAt.UTC()
	return &s, nil
}

const reconciliationColumns = `run_id::text, activity_name, operation_id, idempotency_key, version, step_id,
	logical_attempt, status, result, error, reconciled_by, diagnostics, created_at, updated_at`

// reconciliationRow reads one record, or nil when the query finds none.
func reconciliationRow(ctx context.Context, q ReconciliationQuerier, sql string, args ...any) (*task.ReconcileRecord, error) {
	var (
		r                          task.ReconcileRecord
		attempt                    int
		status                     string
		result, stepErr, diagnoses []byte
	)
	err := q.QueryRow(ctx, sql, args...).Scan(&r.RunID, &r.ActivityName, &r.OperationID, &r.IdempotencyKey,
		&r.Version, &r.StepID, &attempt, &status, &result, &stepErr, &r.ReconciledBy, &diagnoses,
		&r.CreatedAt, &r.UpdatedAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("round: read reconciliation record: %w", err)
	}
	r.LogicalAttemptID, r.Status = strconv.Itoa(attempt), task.ReconcileStatus(status)
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	if err := reconcileUnmarshal(result, &r.Result); err != nil {
		return nil, err
	}
	if err := reconcileUnmarshal(stepErr, &r.Error); err != nil {
		return nil, err
	}
	if err := reconcileUnmarshal(diagnoses, &r.Diagnostics); err != nil {
		return nil, err
	}
	return &r, nil
}

// reconcileUnmarshal decodes a non-NULL jsonb column into v.
func reconcileUnmarshal(data []byte, v any) error {
	if data == nil {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("round: decode reconciliation record: %w", err)
	}
	return nil
}

// reconcileTask sets the reconciliation fields of the wire task of t: the
// operation id of a step keyed by the plan, the fencing token (the logical
// attempt, which only grows), and the resend mark.
func reconcileTask(t decide.Task, wt *task.Task) {
	if t.IdempotencyKey != "" {
		wt.OperationID = task.OperationID(t.StepID, wt.LogicalAttemptID)
	}
	wt.FencingToken = uint64(max(t.LogicalAttempt, 0))
	wt.Resend = t.Resend
}
