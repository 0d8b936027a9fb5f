package journal

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/store/pipetx"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/outbox"
)

// ErrDone is the error of a Write used after its Commit or Rollback.
var ErrDone = errors.New("journal: write already committed or rolled back")

// Write is one unit of work on the log: appends to the event log, each
// with the bus copies of the events it persists, and the caller's own
// outbox messages, which commit together or not at all. The caller queues
// its own statements on the same round trips (Batch), so a transaction
// that reads, then writes, costs two round trips however many appends and
// messages it holds: the appends go out with the caller's writes (Flush),
// and the outbox rows, which need what the appends returned (runSeq,
// persistedAt), go in one statement with the transaction's COMMIT
// (Commit). Not safe for concurrent use.
type Write struct {
	j  *Journal
	tx pgx.Tx
	// pipe is set when COMMIT rides with the last batch (pipetx).
	pipe *pipetx.Tx
	b    *pgx.Batch
	// appends are the appends queued so far, in order; unsent is how many
	// of the last ones b still holds.
	appends []*Appended
	unsent  int
	msgs    []outbox.Message
	done    bool
}

// Appended is an append queued on a Write. Its results are set once the
// round trip that sent it was read without error (Flush, Commit).
type Appended struct {
	evs   []events.Event
	res   []eventlog.AppendResult
	trace trace.SpanContext
}

// Results returns the append's results, one per event, in order: the
// event's runSeq, and whether this append persisted it (false for an
// idempotency key already in its run).
func (a *Appended) Results() []eventlog.AppendResult { return a.res }

// Run runs fn in a unit of work of its own on pool, and commits it: w
// runs in a pipelined transaction (pipetx) on generic plans
// (eventlog.GenericPlansSQL), whose BEGIN goes out with its first round
// trip, w's or one fn sends on w.Tx(), and whose COMMIT goes with w's
// last (Commit), so that neither costs a round trip of its own. If fn
// returns nil without committing w, Run commits it. If fn returns an
// error, or panics, or rolls w back, nothing of it is committed. A
// failure of the round trip that carried the COMMIT is a
// *pipetx.CommitError: after a lost connection the transaction may have
// committed; after any other error it did not. Run is the pool form of
// Begin, as river pairs Insert with InsertTx.
func (j *Journal) Run(ctx context.Context, pool *pgxpool.Pool, fn func(w *Write) error) error {
	return pipetx.BeginFunc(ctx, pool, []string{eventlog.GenericPlansSQL}, func(tx *pipetx.Tx) error {
		w := j.Begin(tx)
		if err := fn(w); err != nil || w.done {
			return err
		}
		return w.Commit(ctx)
	})
}

// Begin starts a unit of work in the caller's transaction tx:
//
//   - on a *pipetx.Tx, the Write sends its batches in the transaction, and
//     Commit sends its last one with the transaction's COMMIT
//     (pipetx.Tx.CommitBatch), which ends it; the caller may send batches
//     of its own in between (the reads a decision needs);
//   - on any other pgx.Tx (a savepoint, a caller's transaction), Commit
//     sends the last batch in it, and the transaction is the caller's to
//     commit.
//
// A unit of work in a transaction of its own is Run's.
func (j *Journal) Begin(tx pgx.Tx) *Write {
	w := &Write{j: j, tx: tx, b: &pgx.Batch{}}
	w.pipe, _ = tx.(*pipetx.Tx)
	return w
}

// Tx returns the transaction the Write runs in, for the caller's own
// statements between its round trips (reads a decision needs).
func (w *Write) Tx() pgx.Tx { return w.tx }

// Batch returns the batch the Write's next round trip sends, for the
// caller's own statements: they go out with the appends queued since the
// last round trip, in the order queued, in Flush, or ahead of the outbox
// rows and the COMMIT in Commit. It changes at every round trip: call it
// again after Flush. Nil once the Write is done.
func (w *Write) Batch() *pgx.Batch {
	if w.done {
		return nil
	}
	return w.b
}

// Append queues the append of evs, all of one run, in order, with a
// compare-and-swap on the run's head when expectedHead is not nil: one
// weft_event_append per event (docs/event-log.md, "Appending"). A key
// repeated within evs, or already in the run, persists nothing and
// returns the runSeq already stored; such an event gets no bus copy. The
// bus copies of the events it persists carry the span context of ctx.
// Events are validated before anything is queued: an invalid one fails the
// call and queues nothing. A failed compare-and-swap (eventlog.ErrConflict)
// or a duplicate event id is the error of the round trip that sends the
// append, and the transaction is then aborted. No events queues nothing.
func (w *Write) Append(ctx context.Context, expectedHead *int64, evs ...events.Event) (*Appended, error) {
	if w.done {
		return nil, ErrDone
	}
	as, err := w.queue(ctx, []eventlog.RunAppend{{ExpectedHead: expectedHead, Events: evs}}, w.j.log.EventsAppendManyBatch)
	if err != nil {
		return nil, err
	}
	return as[0], nil
}

// AppendIf queues the append of evs, all of one run, in order, at the
// run's head, only if onlyIf, an SQL condition on the run (its id as $1),
// holds once the run's head lock is taken (eventlog.RunAppend.OnlyIf):
// otherwise nothing is appended, and no bus copy is sent. A key already in
// the run persists nothing, as in Append. It is how the engine writes to
// another run's log while that run has not ended.
func (w *Write) AppendIf(ctx context.Context, onlyIf string, evs ...events.Event) (*Appended, error) {
	if w.done {
		return nil, ErrDone
	}
	as, err := w.queue(ctx, []eventlog.RunAppend{{OnlyIf: onlyIf, Events: evs}}, w.j.log.EventsAppendManyBatch)
	if err != nil {
		return nil, err
	}
	return as[0], nil
}

// AppendNew queues, as one statement (weft_events_append_new,
// docs/event-log.md, "Appending many new events"), the append of parts
// whose events the caller knows to be new and numbered: every part has an
// ExpectedHead, and its events carry in RunSeq the runSeqs that follow it;
// a later part of the same run expects the head the earlier ones leave.
// A part's Trace is the span context its events' bus copies carry; the
// zero value means that of ctx. It is the engine's append. Every event is persisted, or, if the log is
// not what the caller predicted, none is and the round trip that sends
// them fails (eventlog.ErrConflict, eventlog.ErrDuplicateEventID). Events
// and numbering are checked before anything is queued. It returns one
// Appended per part.
func (w *Write) AppendNew(ctx context.Context, parts ...eventlog.RunAppend) ([]*Appended, error) {
	if w.done {
		return nil, ErrDone
	}
	return w.queue(ctx, parts, w.j.log.EventsAppendNewBatch)
}

// appendBatch is the event log's way of queueing parts' appends on a
// batch (eventlog.Store.EventsAppendManyBatch or EventsAppendNewBatch).
type appendBatch func(*pgx.Batch, []eventlog.RunAppend) ([][]eventlog.AppendResult, error)

// queue queues parts' appends with queueFn, which validates them (a run
// id the log accepts, a canonical UUID, is a valid subject token too), and
// records one Appended per part, traced with the part's Trace or the span
// context of ctx.
func (w *Write) queue(ctx context.Context, parts []eventlog.RunAppend, queueFn appendBatch) ([]*Appended, error) {
	res, err := queueFn(w.b, parts)
	if err != nil {
		return nil, err
	}
	out := make([]*Appended, len(parts))
	for p, part := range parts {
		out[p] = &Appended{evs: part.Events, res: res[p], trace: trace.SpanContextFromContext(ctx)}
		if part.Trace.IsValid() {
			out[p].trace = part.Trace
		}
	}
	w.appends = append(w.appends, out...)
	w.unsent += len(out)
	return out, nil
}

// Enqueue adds msgs, the caller's own outbox messages (the engine's
// tasks), to what Commit enqueues: ahead of the events' bus copies, in
// the order given, in the same statement. They keep their own trace
// headers and get none from a ctx. They are validated by Commit.
func (w *Write) Enqueue(msgs ...outbox.Message) {
	w.msgs = append(w.msgs, msgs...)
}

// Flush sends what Batch holds, the caller's statements and the appends
// queued since the last round trip, in one round trip, if anything, and
// reads every result: the appends' Results are then set. It returns the
// first error; the transaction is then aborted.
func (w *Write) Flush(ctx context.Context) error {
	if w.done {
		return ErrDone
	}
	b := w.b
	w.b = &pgx.Batch{}
	w.unsent = 0
	return w.send(ctx, b, false)
}

// Commit ends the unit of work. Appends not sent yet go out first, with
// what Batch holds, in a round trip of their own (Flush); then the outbox rows, the caller's messages
// (Enqueue) and the bus copy of every event the appends persisted, go in
// one statement, with whatever the caller queued on Batch, and with the
// transaction's COMMIT when the Write runs on a *pipetx.Tx (Begin, Run). The journal's metrics count the appended events then. With
// appends already sent, that is one round trip.
func (w *Write) Commit(ctx context.Context) error {
	if w.done {
		return ErrDone
	}
	err := w.commit(ctx)
	if err != nil {
		_ = w.Rollback(context.WithoutCancel(ctx))
	}
	w.done, w.b = true, nil
	return err
}

func (w *Write) commit(ctx context.Context) error {
	if w.unsent > 0 {
		if err := w.Flush(ctx); err != nil {
			return err
		}
	}
	msgs, err := w.messages(ctx)
	if err != nil {
		return err
	}
	// The events' copies carry the trace of their appends, the caller's
	// messages their own: ctx adds none.
	if err := outbox.EnqueueBatch(trace.ContextWithSpanContext(ctx, trace.SpanContext{}), w.b, msgs...); err != nil {
		return err
	}
	w.j.metrics.count(ctx, w.appends)
	return w.send(ctx, w.b, true)
}

// Rollback ends a Write that did not commit: nothing more is queued or
// sent, and on a *pipetx.Tx, whose COMMIT would have been the Write's, the
// transaction is rolled back; any other transaction is the caller's. A
// failed Commit rolls back so. It is safe to call after Commit, and more
// than once.
func (w *Write) Rollback(ctx context.Context) error {
	if w.done {
		return nil
	}
	w.done, w.b = true, nil
	if w.pipe != nil {
		return w.pipe.Rollback(ctx)
	}
	return nil
}

// send sends b in the Write's transaction, with the transaction's COMMIT
// when commit is set and the Write runs on a *pipetx.Tx.
func (w *Write) send(ctx context.Context, b *pgx.Batch, commit bool) error {
	if commit && w.pipe != nil {
		return w.pipe.CommitBatch(ctx, b)
	}
	if len(b.QueuedQueries) == 0 {
		return nil
	}
	return w.tx.SendBatch(ctx, b).Close()
}

// messages returns what Commit enqueues: the caller's messages, then the
// bus copy of every event the appends persisted, in order.
func (w *Write) messages(ctx context.Context) ([]outbox.Message, error) {
	msgs := w.msgs[:len(w.msgs):len(w.msgs)]
	for _, a := range w.appends {
		var err error
		if msgs, err = w.j.appendMessages(ctx, msgs, a.evs, a.res, a.trace); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}
