package round

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/tracing"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// queueTrackRun queues on b what keeps the run's row in engine_runs in
// step with d: started (it holds a place in its environment), ended (gone: nothing more to sweep, its place freed), or
// reopened by RETRY_STEP (back, started). It also queues d's
// reconciliation records.
func queueTrackRun(b *pgx.Batch, runID, environment string, d decide.Decision) error {
	if err := queueReconciliations(b, d.Reconciliations); err != nil {
		return err
	}
	for _, e := range d.Events {
		switch e.Type {
		case events.RunResumed:
			b.Queue(`INSERT INTO engine_runs (run_id, environment_id, started_at) VALUES ($1, $2, now())
				ON CONFLICT (run_id) DO NOTHING`, runID, environment)
		case events.RunStarted:
			b.Queue(`UPDATE engine_runs SET started_at = now() WHERE run_id = $1`, runID)
		case events.RunCompleted, events.RunFailed, events.RunCancelled:
			b.Queue(`DELETE FROM engine_runs WHERE run_id = $1`, runID)
		default: // no change to the run's place
		}
	}
	return nil
}

// taskMessages returns the outbox message of each task, on its tenant's
// lane weft.tasks.<queue>.<lane> (weft.tasks.<queue> for a run of no
// tenant; streams.TenantTaskSubject) so that workers take the tasks of a
// shared queue fairly across tenants, deduplicated per logical attempt,
// carrying the trace context traces[i] when it is valid, else that of ctx, if any, each
// signed by signer (nil: none).
func taskMessages(ctx context.Context, tasks []decide.Task, traces []trace.SpanContext, signer *task.Signer) ([]outbox.Message, error) {
	msgs := make([]outbox.Message, len(tasks))
	now := time.Now().UTC()
	for i, t := range tasks {
		subject, err := streams.TenantTaskSubject(t.Queue, t.TenantID)
		if err != nil {
			return nil, fmt.Errorf("round: task of step %s: %w", t.StepID, err)
		}
		payload, err := json.Marshal(wireTask(t, now, signer))
		if err != nil {
			return nil, fmt.Errorf("round: encode task of step %s: %w", t.StepID, err)
		}
		attempt := strconv.Itoa(t.LogicalAttempt)
		dedupe := task.DedupeID(t.RunID, t.StepID, attempt)
		if t.Resend {
			// The bus may remember the first dispatch's id for its whole
			// duplicate window and drop a resend under it.
			dedupe += "/resend-" + strconv.FormatInt(now.UnixNano(), 10)
		}
		msgs[i] = outbox.Message{Subject: subject, Payload: payload, DedupeID: dedupe}
		sc := trace.SpanContextFromContext(ctx)
		if i < len(traces) && traces[i].IsValid() {
			sc = traces[i]
		}
		if sc.IsValid() {
			msgs[i].Headers = tracing.InjectHeaders(trace.ContextWithSpanContext(ctx, sc), nil)
		}
	}
	return msgs, nil
}

// activityKeyType is the event-type component of the idempotency key a task
// carries when its step sets none: one key per logical attempt, distinct
// from the key of any event.
const activityKeyType events.Type = "ActivityTask"

// wireTask is the protocol form of a decided task (docs/worker-protocol.md),
// with its token when signer is set.
func wireTask(t decide.Task, now time.Time, signer *task.Signer) task.Task {
	attempt := strconv.Itoa(t.LogicalAttempt)
	key := t.IdempotencyKey
	if key == "" {
		key = events.IdempotencyKey(t.RunID, t.StepID, attempt, activityKeyType, t.PlanVersion)
	}
	wt := task.Task{
		SchemaVersion:    task.SchemaVersion,
		RunID:            t.RunID,
		TenantID:         t.TenantID,
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
	if signer != nil {
		wt.Token = signer.Sign(wt.RunID, wt.StepID, wt.LogicalAttemptID)
	}
	return wt
}

// queueTimers queues on b the writes of timers; setting a timer that
// exists moves its due time.
func queueTimers(b *pgx.Batch, timers []decide.Timer) {
	for _, t := range timers {
		b.Queue(`
			INSERT INTO engine_timers (run_id, step_id, logical_attempt, kind, due_at)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (run_id, step_id, logical_attempt, kind) DO UPDATE SET due_at = EXCLUDED.due_at`,
			t.RunID, t.StepID, t.LogicalAttempt, string(t.Kind), t.DueAt)
	}
}
