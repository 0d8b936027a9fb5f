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
}

// New returns a Journal over the event log (an *eventlog.Store, or any
// other eventlog.Appender). Without WithMetrics it counts nothing.
func New(log eventlog.Appender, opts ...Option) *Journal {
	j := &Journal{log: log}
	for _, opt := range opts {
		opt(j)
	}
	return j
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
