package eventlog

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/events"
)

// appendSQL appends one event in one round trip (weft_event_append in
// 0001_event_log.sql): head advance under the head's row lock, CAS,
// insert unless the idempotency key is already in the run.
const appendSQL = `SELECT o_run_seq, o_persisted, o_persisted_at FROM weft_event_append(
	$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`

// RunAppend is one part of an append (EventsAppendManyBatch,
// EventsAppendNewBatch): events of one run, in order, and the head
// expected before the first of them (nil: no compare-and-swap).
type RunAppend struct {
	ExpectedHead *int64
	Events       []events.Event
	// Trace is the span context the events' bus copies carry when a
	// journal writes them (pkg/journal); the zero value means the span
	// context of the ctx of the append. The log itself stores no trace.
	Trace trace.SpanContext
	// OnlyIf, when set, is an SQL condition on the run, its id as $1,
	// that EventsAppendManyBatch evaluates once it holds the run's head
	// lock: when false, none of the part's events is appended, and each
	// result has Persisted false and RunSeq 0. It is the engine's append to
	// another run's log while that run has not ended. A part with OnlyIf
	// takes no ExpectedHead.
	OnlyIf string
}

// lockHeadSQL takes a run's head lock, ahead of an OnlyIf part, so that
// the condition, in a statement of its own, reads the run as its last
// writer committed it.
const lockHeadSQL = `SELECT 1 FROM run_heads WHERE run_id = $1 FOR UPDATE`

// GenericPlansSQL makes the rest of a transaction run its prepared
// statements, and those of the functions it calls (weft_event_append), on
// generic plans. Postgres otherwise plans anew, at every execution, each
// statement that reads or writes the partitioned run_events: a plan for
// the one partition a run id selects always looks cheaper than the
// generic plan, which prunes the others when it starts, and that planning
// costs more than the statement. Writers send it with BEGIN (a pipetx
// prelude), ahead of their appends.
const GenericPlansSQL = "set local plan_cache_mode = force_generic_plan"

// EventsAppendManyBatch queues on b the append of every part, in order,
// one weft_event_append per event (docs/event-log.md, "Appending"), for a
// caller that sends them in one round trip with other statements of its
// transaction; pkg/journal's Write is that caller. Parts may
// be of different runs, or several of one run (each part's ExpectedHead
// then counts the parts before it). A non-nil ExpectedHead is compared
// with the run's head before the part's first event; the head lock is
// then held until the transaction ends, so no other writer can
// interleave. Each event gets a new runSeq, gap-free after its run's
// head, or, for an idempotency key already in the run (or earlier in the
// part), the existing event's runSeq with Idempotent set and nothing
// written.
//
// The returned results, part by part, are set once b's results have been
// read. A failed append's error is what b's BatchResults.Close returns:
// ErrConflict (a *ConflictError) for a failed compare-and-swap,
// ErrDuplicateEventID for an eventId already in the log under another
// key; the transaction is then aborted, must be rolled back, and nothing
// of it is written. Events are validated before anything is queued: an
// invalid one fails the call with ErrInvalidEvent and leaves b as it was.
// No events queues nothing.
func (s *Store) EventsAppendManyBatch(b *pgx.Batch, parts []RunAppend) ([][]AppendResult, error) {
	args := make([][][]any, len(parts))
	for p, part := range parts {
		if part.OnlyIf != "" && part.ExpectedHead != nil {
			return nil, fmt.Errorf("%w: part %d has both OnlyIf and an expected head", ErrInvalidEvent, p)
		}
		args[p] = make([][]any, len(part.Events))
		for i := range part.Events {
			ev := &part.Events[i]
			if ev.RunID != part.Events[0].RunID {
				return nil, fmt.Errorf("%w: one part holds runs %q and %q", ErrInvalidEvent, part.Events[0].RunID, ev.RunID)
			}
			head := part.ExpectedHead
			if i > 0 {
				head = nil
			}
			var err error
			if args[p][i], err = s.appendArgs(ev, head); err != nil {
				return nil, fmt.Errorf("%w (part %d, event %d)", err, p, i)
			}
		}
	}
	out := make([][]AppendResult, len(parts))
	for p, part := range parts {
		if part.OnlyIf != "" && len(part.Events) > 0 {
			b.Queue(lockHeadSQL, part.Events[0].RunID)
		}
		out[p] = make([]AppendResult, len(part.Events))
		for i := range part.Events {
			sql := appendSQL
			if part.OnlyIf != "" {
				sql += " WHERE " + part.OnlyIf
			}
			b.Queue(sql, args[p][i]...).QueryRow(func(row pgx.Row) error {
				res, err := scanResult(row)
				if part.OnlyIf != "" && errors.Is(err, pgx.ErrNoRows) {
					return nil // the condition was false: nothing appended
				}
				if err != nil {
					return appendError(&part.Events[i], part.ExpectedHead, err)
				}
				out[p][i] = res
				return nil
			})
		}
	}
	return out, nil
}

// appendArgs validates ev and returns weft_event_append's arguments.
func (s *Store) appendArgs(ev *events.Event, expectedHead *int64) ([]any, error) {
	version, err := validate(ev, s.maxEventData)
	if err != nil {
		return nil, err
	}
	return []any{
		ev.RunID, ev.EventID, nullText(ev.StepID), nullText(ev.EngineAttemptID),
		nullText(ev.LogicalAttemptID), string(ev.EventType), nullJSON(ev.EventData),
		ev.IdempotencyKey, ev.EmittedAt, nullText(ev.AdapterVersion), nullJSON(ev.EngineRunRef),
		nullText(ev.CausedBySignalID), nullText(ev.ParentEventID), version, expectedHead,
	}, nil
}

func scanResult(row pgx.Row) (AppendResult, error) {
	var res AppendResult
	if err := row.Scan(&res.RunSeq, &res.Persisted, &res.PersistedAt); err != nil {
		return AppendResult{}, err
	}
	res.Idempotent = !res.Persisted
	res.PersistedAt = res.PersistedAt.UTC()
	return res, nil
}

func appendError(ev *events.Event, expectedHead *int64, err error) error {
	return fmt.Errorf("eventlog: append %s %s to run %s: %w",
		ev.EventType, ev.EventID, ev.RunID, mapError(ev.RunID, expectedHead, err))
}

// nullText stores an empty optional field as NULL.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullJSON stores an absent JSON field as NULL; present ones go as jsonb.
func nullJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}
