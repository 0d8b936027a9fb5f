package eventlog

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/events"
)

// appendSQL appends one event in one round trip (weft_event_append in
// 0001_event_log.sql): head advance under the head's row lock, CAS,
// insert unless the idempotency key is already in the run.
const appendSQL = `SELECT o_run_seq, o_persisted, o_persisted_at FROM weft_event_append(
	$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`

// EventAppend appends ev in a transaction of its own (one statement, one
// round trip) and returns the event's runSeq: a new one, gap-free after the
// run's head, or, for an idempotency key already in the run, the existing
// event's runSeq with Idempotent set and nothing written. An invalid event fails with
// ErrInvalidEvent, a failed WithExpectedHead with ErrConflict, an eventId
// already in the log with ErrDuplicateEventID; none of them writes anything.
func (s *Store) EventAppend(ctx context.Context, ev events.Event, opts ...AppendOption) (AppendResult, error) {
	return s.appendOne(ctx, s.pool, ev, opts)
}

// EventAppendTx is EventAppend inside the caller's transaction: the event
// commits or rolls back with tx, and a rollback leaves no gap in runSeq.
// It holds the run head's row lock until tx ends, so other appends to the
// run wait. After any database error (ErrConflict, ErrDuplicateEventID) tx
// is aborted and must be rolled back.
func (s *Store) EventAppendTx(ctx context.Context, tx pgx.Tx, ev events.Event, opts ...AppendOption) (AppendResult, error) {
	return s.appendOne(ctx, tx, ev, opts)
}

func (s *Store) appendOne(ctx context.Context, q Querier, ev events.Event, opts []AppendOption) (AppendResult, error) {
	var o appendOptions
	for _, opt := range opts {
		opt(&o)
	}
	args, err := s.appendArgs(&ev, o.expectedHead)
	if err != nil {
		return AppendResult{}, err
	}
	res, err := scanResult(q.QueryRow(ctx, appendSQL, args...))
	if err != nil {
		return AppendResult{}, appendError(&ev, o.expectedHead, err)
	}
	return res, nil
}

// EventsAppendTx appends evs, all of one run, in order inside tx, in one
// round trip, and returns one result per event, as EventAppend would. A
// non-nil expectedHead is compared with the run's head before the first
// event (ErrConflict on mismatch); the head lock is then held, so no other
// writer can interleave. A key repeated within evs returns the runSeq of
// its first occurrence. Events are validated before anything is sent. After
// a database error (ErrConflict, ErrDuplicateEventID) tx is aborted and must
// be rolled back; nothing of evs is then written. No events is a no-op.
func (s *Store) EventsAppendTx(ctx context.Context, tx pgx.Tx, expectedHead *int64, evs ...events.Event) ([]AppendResult, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	res, err := s.EventsAppendManyTx(ctx, tx, []RunAppend{{ExpectedHead: expectedHead, Events: evs}})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// RunAppend is one part of EventsAppendManyTx: events of one run, in
// order, and the head expected before the first of them (nil: no
// compare-and-swap).
type RunAppend struct {
	ExpectedHead *int64
	Events       []events.Event
}

// GenericPlansSQL makes the rest of a transaction run its prepared
// statements, and those of the functions it calls (weft_event_append), on
// generic plans. Postgres otherwise plans anew, at every execution, each
// statement that reads or writes the partitioned run_events: a plan for
// the one partition a run id selects always looks cheaper than the
// generic plan, which prunes the others when it starts, and that planning
// costs more than the statement. EventsAppendManyTx sends it ahead of its
// appends, in the same round trip.
const GenericPlansSQL = "set local plan_cache_mode = force_generic_plan"

// EventsAppendManyTx appends every part in order inside tx, all in one
// round trip, and returns the results part by part, as EventsAppendTx
// would for each. Parts may be of different runs, or several of one run
// (each part's ExpectedHead then counts the parts before it). A failed
// compare-and-swap of any part fails the call with ErrConflict; like every
// database error it aborts tx, which must be rolled back, and nothing is
// written. Events are validated before anything is sent. It leaves tx on
// generic plans (GenericPlansSQL) for the rest of the transaction.
func (s *Store) EventsAppendManyTx(ctx context.Context, tx pgx.Tx, parts []RunAppend) ([][]AppendResult, error) {
	b := &pgx.Batch{}
	b.Queue(GenericPlansSQL)
	out, err := s.EventsAppendManyBatch(b, parts)
	if err != nil || b.Len() == 1 {
		return out, err
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("eventlog: append %d parts: %w", len(parts), err)
	}
	return out, nil
}

// EventsAppendManyBatch queues on b the appends EventsAppendManyTx makes,
// for a caller that sends them in one round trip with other statements of
// its transaction (a BEGIN before them, its own writes after them). The
// returned results, part by part, are set once b's results have been
// read; a failed append's error, mapped as EventsAppendManyTx maps it
// (ErrConflict, ErrDuplicateEventID), is what b's BatchResults.Close
// returns, and the transaction is then aborted. Events are validated
// before anything is queued: an invalid one fails the call and leaves b as
// it was. No events queues nothing.
func (s *Store) EventsAppendManyBatch(b *pgx.Batch, parts []RunAppend) ([][]AppendResult, error) {
	args := make([][][]any, len(parts))
	for p, part := range parts {
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
		out[p] = make([]AppendResult, len(part.Events))
		for i := range part.Events {
			b.Queue(appendSQL, args[p][i]...).QueryRow(func(row pgx.Row) error {
				res, err := scanResult(row)
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

// EventsAppendBatch queues on b the append of evs, all of one run, as
// EventsAppendTx appends them: EventsAppendManyBatch of one part.
func (s *Store) EventsAppendBatch(b *pgx.Batch, expectedHead *int64, evs ...events.Event) ([]AppendResult, error) {
	out, err := s.EventsAppendManyBatch(b, []RunAppend{{ExpectedHead: expectedHead, Events: evs}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
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
