// Package journal commits a run's new events to the event log and their bus
// copies to the outbox in one transaction, so nothing reaches JetStream that
// is not in the log and nothing in the log fails to reach JetStream
// (DESIGN.md). Every writer of events (gateway, engine) goes through it.
package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/tracing"
)

// Journal appends events and enqueues their bus messages. Safe for
// concurrent use.
type Journal struct {
	log     *eventlog.Store
	metrics *Metrics
}

// New returns a Journal over the event log. Without WithMetrics it counts
// nothing.
func New(log *eventlog.Store, opts ...Option) *Journal {
	j := &Journal{log: log}
	for _, opt := range opts {
		opt(j)
	}
	return j
}

// AppendTx appends evs, all of one run, inside tx, with the optional
// compare-and-swap on the run's head (see eventlog.Store.EventsAppendTx),
// and enqueues one outbox message on weft.events.<runId> for each event that
// was newly persisted. A duplicate idempotency key persists nothing and
// enqueues nothing. The message's dedupe id is the persisted event's id and
// its payload is the envelope with runSeq and persistedAt filled in.
// On eventlog.ErrConflict tx is aborted and must be rolled back.
func (j *Journal) AppendTx(ctx context.Context, tx pgx.Tx, expectedHead *int64, evs ...events.Event) ([]eventlog.AppendResult, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	res, err := j.AppendManyTx(ctx, tx, []eventlog.RunAppend{{ExpectedHead: expectedHead, Events: evs}})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// AppendManyTx is AppendTx for many parts (eventlog.EventsAppendManyTx):
// one round trip for all the appends and one for all the outbox rows. The
// bus copies carry the trace context of ctx (outbox.EnqueueTx).
func (j *Journal) AppendManyTx(ctx context.Context, tx pgx.Tx, parts []eventlog.RunAppend) ([][]eventlog.AppendResult, error) {
	b := &pgx.Batch{}
	b.Queue(eventlog.GenericPlansSQL)
	pending, err := j.AppendManyBatch(ctx, b, parts, nil)
	if err != nil {
		return nil, err
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	b = &pgx.Batch{}
	if err := j.OutboxBatch(ctx, b, pending...); err != nil {
		return nil, err
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	results := make([][]eventlog.AppendResult, len(pending))
	for p, pe := range pending {
		results[p] = pe.res
	}
	return results, nil
}

// Pending is an append queued on a batch by AppendBatch. Its results are
// known once the batch's results have been read; its bus copies are then
// queued with OutboxBatch on a later batch of the same transaction.
type Pending struct {
	evs   []events.Event
	res   []eventlog.AppendResult
	trace trace.SpanContext
}

// AppendBatch queues on b the append of evs, all of one run, with the
// optional compare-and-swap on the run's head, as AppendTx appends them,
// for a caller that sends them in one round trip with other statements
// of its transaction (eventlog.Store.EventsAppendBatch). The outbox rows
// depend on what the append returns (runSeq, persistedAt), so they are
// not queued here: once b's results have been read, OutboxBatch queues
// them on a later batch of the same transaction, before its COMMIT, with
// the trace context of ctx. Events are validated before anything is
// queued; an invalid one fails the call and leaves b as it was.
func (j *Journal) AppendBatch(ctx context.Context, b *pgx.Batch, expectedHead *int64, evs ...events.Event) (*Pending, error) {
	ps, err := j.AppendManyBatch(ctx, b, []eventlog.RunAppend{{ExpectedHead: expectedHead, Events: evs}}, nil)
	if err != nil {
		return nil, err
	}
	return ps[0], nil
}

// AppendManyBatch is AppendBatch for many parts, queued as one statement
// (eventlog.Store.EventsAppendManyBatch): one Pending per part. The bus
// copies of parts[p]'s events carry traces[p] when it is valid, and the
// span context of ctx otherwise; traces is nil or as long as parts.
func (j *Journal) AppendManyBatch(ctx context.Context, b *pgx.Batch, parts []eventlog.RunAppend, traces []trace.SpanContext) ([]*Pending, error) {
	return queueAppends(ctx, b, parts, traces, j.log.EventsAppendManyBatch)
}

// AppendNewBatch is AppendManyBatch for parts whose events the caller
// knows to be new and numbered (eventlog.Store.EventsAppendNewBatch): one
// statement for all of them, which writes every event or, if the log is
// not what the caller predicted, none.
func (j *Journal) AppendNewBatch(ctx context.Context, b *pgx.Batch, parts []eventlog.RunAppend, traces []trace.SpanContext) ([]*Pending, error) {
	return queueAppends(ctx, b, parts, traces, j.log.EventsAppendNewBatch)
}

// appendBatch is the event log's way of queueing parts' appends on a
// batch (eventlog.Store.EventsAppendManyBatch or EventsAppendNewBatch).
type appendBatch func(*pgx.Batch, []eventlog.RunAppend) ([][]eventlog.AppendResult, error)

// queueAppends checks what the log does not (that each part's run has an
// event subject, and that traces, if any, match parts), queues the
// appends with queue, and returns one Pending per part, carrying
// traces[p] when it is valid and the span context of ctx otherwise.
func queueAppends(ctx context.Context, b *pgx.Batch, parts []eventlog.RunAppend, traces []trace.SpanContext, queue appendBatch) ([]*Pending, error) {
	if traces != nil && len(traces) != len(parts) {
		return nil, fmt.Errorf("journal: %d trace contexts for %d parts", len(traces), len(parts))
	}
	for _, part := range parts {
		if len(part.Events) > 0 {
			if _, err := streams.EventSubject(part.Events[0].RunID); err != nil {
				return nil, err
			}
		}
	}
	res, err := queue(b, parts)
	if err != nil {
		return nil, err
	}
	out := make([]*Pending, len(parts))
	for p, part := range parts {
		out[p] = &Pending{evs: part.Events, res: res[p], trace: trace.SpanContextFromContext(ctx)}
		if traces != nil && traces[p].IsValid() {
			out[p].trace = traces[p]
		}
	}
	return out, nil
}

// Results returns the append's results, one per event, as AppendTx
// returns them. They are set once the batch's results have been read
// without error.
func (p *Pending) Results() []eventlog.AppendResult { return p.res }

// OutboxBatch queues on b, in one statement, the outbox message of every
// event that pending persisted (none for a duplicate idempotency key),
// each carrying the trace context of the ctx its append was queued with
// (none if that had none: appends of several requests may share the
// statement), and counts the appends in the journal's metrics. Call it
// once, after the appends' batch results were read without error. With
// nothing persisted it queues nothing.
func (j *Journal) OutboxBatch(ctx context.Context, b *pgx.Batch, pending ...*Pending) error {
	return j.OutboxBatchWith(ctx, b, nil, pending...)
}

// OutboxBatchWith is OutboxBatch with msgs, the caller's own messages
// (with their own trace headers, if any), enqueued ahead of the events'
// in the same statement.
func (j *Journal) OutboxBatchWith(ctx context.Context, b *pgx.Batch, msgs []outbox.Message, pending ...*Pending) error {
	msgs = slices.Clip(msgs)
	parts := make([]eventlog.RunAppend, len(pending))
	results := make([][]eventlog.AppendResult, len(pending))
	for k, p := range pending {
		parts[k], results[k] = eventlog.RunAppend{Events: p.evs}, p.res
		var err error
		if msgs, err = appendMessages(ctx, msgs, p.evs, p.res, p.trace); err != nil {
			return err
		}
	}
	if err := outbox.EnqueueBatch(trace.ContextWithSpanContext(ctx, trace.SpanContext{}), b, msgs...); err != nil {
		return err
	}
	j.metrics.count(ctx, parts, results)
	return nil
}

// appendMessages appends to msgs the bus copy of each event of evs that res
// says was persisted, carrying sc when it is valid.
func appendMessages(ctx context.Context, msgs []outbox.Message, evs []events.Event, res []eventlog.AppendResult, sc trace.SpanContext) ([]outbox.Message, error) {
	for i, r := range res {
		if !r.Persisted {
			continue
		}
		msg, err := eventMessage(evs[i], r)
		if err != nil {
			return nil, err
		}
		if sc.IsValid() {
			msg.Headers = tracing.InjectHeaders(trace.ContextWithSpanContext(ctx, sc), msg.Headers)
		}
		msgs = append(msgs, msg)
	}
	return msgs, nil
}

// eventMessage is the bus copy of a persisted event.
func eventMessage(ev events.Event, res eventlog.AppendResult) (outbox.Message, error) {
	ev.RunSeq, ev.PersistedAt = res.RunSeq, res.PersistedAt
	payload, err := json.Marshal(ev)
	if err != nil {
		return outbox.Message{}, fmt.Errorf("journal: encode event %s: %w", ev.EventID, err)
	}
	subject, err := streams.EventSubject(ev.RunID)
	if err != nil {
		return outbox.Message{}, err
	}
	return outbox.Message{
		Subject:  subject,
		Payload:  payload,
		DedupeID: ev.EventID,
		OrderKey: ev.RunID,
		Headers: map[string]string{
			streams.HeaderEventType: string(ev.EventType),
			streams.HeaderRunSeq:    strconv.FormatInt(ev.RunSeq, 10),
		},
	}, nil
}

// Append is AppendTx in a transaction of its own.
func (j *Journal) Append(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, expectedHead *int64, evs ...events.Event) ([]eventlog.AppendResult, error) {
	var results []eventlog.AppendResult
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var err error
		results, err = j.AppendTx(ctx, tx, expectedHead, evs...)
		return err
	})
	return results, err
}
