package round

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/tracing"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// writeFollowUps writes what decisions ask for besides events: the tasks
// (outbox), each carrying the trace context of its round (traces[i]), and
// the timers.
func writeFollowUps(ctx context.Context, tx pgx.Tx, tasks []decide.Task, traces []trace.SpanContext, timers []decide.Timer) error {
	if err := enqueueTasks(ctx, tx, tasks, traces); err != nil {
		return err
	}
	return TimersSetTx(ctx, tx, timers)
}

// trackRunTx keeps the run's row in engine_runs in step with d: started
// (it holds a place in its environment), queued (the run queue's), ended
// (gone: nothing more to sweep, its place freed), or reopened by RETRY_STEP
// (back, started). It also writes d's reconciliation records.
func trackRunTx(ctx context.Context, tx pgx.Tx, runID, environment string, d decide.Decision) error {
	if err := ReconciliationInsertTx(ctx, tx, d.Reconciliations); err != nil {
		return err
	}
	var sql string
	for _, e := range d.Events {
		args := []any{runID}
		switch e.Type {
		case events.RunResumed:
			sql = `INSERT INTO engine_runs (run_id, environment_id, started_at) VALUES ($1, $2, now())
				ON CONFLICT (run_id) DO NOTHING`
			args = append(args, environment)
		case events.RunStarted:
			sql = `UPDATE engine_runs SET started_at = now() WHERE run_id = $1`
		case events.RunQueued:
			sql = `UPDATE engine_runs SET queued_at = now() WHERE run_id = $1`
		case events.RunCompleted, events.RunFailed, events.RunCancelled:
			sql = `DELETE FROM engine_runs WHERE run_id = $1`
		default:
			continue
		}
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			return fmt.Errorf("round: run %s: track %s: %w", runID, e.Type, err)
		}
	}
	return nil
}

// enqueueTasks writes one outbox message per task, on weft.tasks.<queue>,
// deduplicated per logical attempt, with traces[i] as the trace context of
// tasks[i] when it is valid (else that of ctx, see outbox.EnqueueTx).
func enqueueTasks(ctx context.Context, tx pgx.Tx, tasks []decide.Task, traces []trace.SpanContext) error {
	if len(tasks) == 0 {
		return nil
	}
	msgs := make([]outbox.Message, len(tasks))
	now := time.Now().UTC()
	for i, t := range tasks {
		subject, err := streams.TaskSubject(t.Queue)
		if err != nil {
			return fmt.Errorf("round: task of step %s: %w", t.StepID, err)
		}
		payload, err := json.Marshal(wireTask(t, now))
		if err != nil {
			return fmt.Errorf("round: encode task of step %s: %w", t.StepID, err)
		}
		attempt := strconv.Itoa(t.LogicalAttempt)
		dedupe := task.DedupeID(t.RunID, t.StepID, attempt)
		if t.Resend {
			// The bus may remember the first dispatch's id for its whole
			// duplicate window and drop a resend under it.
			dedupe += "/resend-" + strconv.FormatInt(now.UnixNano(), 10)
		}
		msgs[i] = outbox.Message{Subject: subject, Payload: payload, DedupeID: dedupe}
		if i < len(traces) && traces[i].IsValid() {
			msgs[i].Headers = tracing.InjectHeaders(trace.ContextWithSpanContext(ctx, traces[i]), nil)
		}
	}
	return outbox.EnqueueTx(ctx, tx, msgs...)
}

// activityKeyType is the event-type component of the idempotency key a task
// carries when its step sets none: one key per logical attempt, distinct
// from the key of any event.
const activityKeyType events.Type = "ActivityTask"

// wireTask is the protocol form of a decided task (docs/worker-protocol.md).
func wireTask(t decide.Task, now time.Time) task.Task {
	attempt := strconv.Itoa(t.LogicalAttempt)
	key := t.IdempotencyKey
	if key == "" {
		key = events.IdempotencyKey(t.RunID, t.StepID, attempt, activityKeyType, t.PlanVersion)
	}
	wt := task.Task{
		SchemaVersion:    task.SchemaVersion,
		RunID:            t.RunID,
		StepID:           t.StepID,
		LogicalAttemptID: attempt,
		PlanVersion:      t.PlanVersion,
		Activity:         t.Activity,
		Queue:            t.Queue,
		Input:            t.Input,
		Secrets:          t.Secrets,
		IdempotencyKey:   key,
		TimeoutMillis:    t.Timeout.Milliseconds(),
		ScheduledAt:      now,
	}
	reconcileTask(t, &wt)
	return wt
}

// TimersSetTx writes timers in tx; setting a timer that exists moves its
// due time.
func TimersSetTx(ctx context.Context, tx pgx.Tx, timers []decide.Timer) error {
	for _, t := range timers {
		_, err := tx.Exec(ctx, `
			INSERT INTO engine_timers (run_id, step_id, logical_attempt, kind, due_at)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (run_id, step_id, logical_attempt, kind) DO UPDATE SET due_at = EXCLUDED.due_at`,
			t.RunID, t.StepID, t.LogicalAttempt, string(t.Kind), t.DueAt)
		if err != nil {
			return fmt.Errorf("round: set %s timer of run %s step %s: %w", t.Kind, t.RunID, t.StepID, err)
		}
	}
	return nil
}
