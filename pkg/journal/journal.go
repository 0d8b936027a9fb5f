// Package journal commits a run's new events to the event log and their bus
// copies to the outbox in one transaction, so nothing reaches JetStream that
// is not in the log and nothing in the log fails to reach JetStream
// (DESIGN.md). Every writer of events (gateway, engine) goes through it.
package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/tracing"
)

// Journal appends events and enqueues their bus messages, in units of
// work (Write): in a transaction of its own (Run) or in the caller's
// (Begin). Safe for concurrent use.
type Journal struct {
	log     eventlog.Appender
	metrics *Metrics
	// perEvent publishes outcomes one event a message (WithEventForm).
	perEvent bool
}

// New returns a Journal over the event log (an *eventlog.Store, or any
// other eventlog.Appender). Without WithMetrics it counts nothing; without
// WithEventForm it publishes outcomes in batches.
func New(log eventlog.Appender, opts ...Option) *Journal {
	j := &Journal{log: log}
	for _, opt := range opts {
		opt(j)
	}
	return j
}

// MaxBatchBytes bounds the body of a batch message (streams.EventBatch):
// a batch that would grow past it is cut, and an event that alone is larger
// goes in a batch of its own, as large as an event message would be.
const MaxBatchBytes = 512 << 10

// WithEventForm sets the form of the outcomes' bus messages
// (streams.EventForm): one batch per run, class and unit of work
// (streams.EventFormBatch, the default), or one message per event
// (streams.EventFormEvent). Inputs are one message per event in both.
func WithEventForm(f streams.EventForm) Option {
	return func(j *Journal) { j.perEvent = f == streams.EventFormEvent }
}

// appendMessages appends to msgs the bus messages of the events of evs that
// res says were persisted, carrying sc when it is valid: each input in a
// message of its own, and each stretch of consecutive outcomes in a batch
// (streams.EventBatch) unless j.perEvent.
func (j *Journal) appendMessages(ctx context.Context, msgs []outbox.Message, evs []events.Event, res []eventlog.AppendResult, sc trace.SpanContext) ([]outbox.Message, error) {
	var b batcher
	flush := func() error {
		msg, ok, err := b.message()
		if ok {
			msgs = append(msgs, traced(ctx, msg, sc))
		}
		return err
	}
	for i, r := range res {
		if !r.Persisted {
			continue
		}
		ev := evs[i]
		ev.RunSeq, ev.PersistedAt = r.RunSeq, r.PersistedAt
		if j.perEvent || streams.EngineInput(ev.EventType) {
			if err := flush(); err != nil {
				return nil, err
			}
			msg, err := eventMessage(ev)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, traced(ctx, msg, sc))
			continue
		}
		enc, err := encode(ev)
		if err != nil {
			return nil, err
		}
		if !b.fits(ev, enc) {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		b.add(ev, enc)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return msgs, nil
}

// traced returns msg carrying sc's trace headers when sc is valid.
func traced(ctx context.Context, msg outbox.Message, sc trace.SpanContext) outbox.Message {
	if sc.IsValid() {
		msg.Headers = tracing.InjectHeaders(trace.ContextWithSpanContext(ctx, sc), msg.Headers)
	}
	return msg
}

func encode(ev events.Event) ([]byte, error) {
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("journal: encode event %s: %w", ev.EventID, err)
	}
	return payload, nil
}

// eventMessage is the bus message of a persisted event in the event form.
func eventMessage(ev events.Event) (outbox.Message, error) {
	payload, err := encode(ev)
	if err != nil {
		return outbox.Message{}, err
	}
	subject, err := streams.EventSubject(ev.RunID, ev.EventType)
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

// batcher gathers consecutive outcomes of one run into a batch message.
type batcher struct {
	evs   []events.Event
	enc   [][]byte
	bytes int
}

// fits reports whether ev, encoded as enc, may join the batch: it is the
// next runSeq of the same run, and the body stays within MaxBatchBytes.
func (b *batcher) fits(ev events.Event, enc []byte) bool {
	if len(b.evs) == 0 {
		return true
	}
	last := b.evs[len(b.evs)-1]
	return ev.RunID == last.RunID && ev.RunSeq == last.RunSeq+1 && b.bytes+len(enc)+1 <= MaxBatchBytes
}

func (b *batcher) add(ev events.Event, enc []byte) {
	b.evs, b.enc, b.bytes = append(b.evs, ev), append(b.enc, enc), b.bytes+len(enc)+1
}

// message returns the batch's message and empties it; ok is false when it
// holds nothing. Its dedupe id is its first event's id, which no other
// message carries.
func (b *batcher) message() (msg outbox.Message, ok bool, err error) {
	if len(b.evs) == 0 {
		return outbox.Message{}, false, nil
	}
	evs, enc := b.evs, b.enc
	*b = batcher{}
	subject, err := streams.EventSubject(evs[0].RunID, evs[0].EventType)
	if err != nil {
		return outbox.Message{}, false, err
	}
	return outbox.Message{
		Subject:  subject,
		Payload:  streams.EncodeBatch(enc),
		DedupeID: evs[0].EventID,
		OrderKey: evs[0].RunID,
		Headers:  streams.BatchHeaders(evs),
	}, true, nil
}
