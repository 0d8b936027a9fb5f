package journal

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/pkg/events"
)

// meterName is the instrumentation scope of the journal's metrics.
const meterName = "github.com/weftrun/weft/pkg/journal"

// Metrics counts the events journals append:
//
//	weft.events.appended  counter {event}  events newly persisted, by event_type (unknown types: other)
//
// Every writer of events goes through a Journal, so the counter sees every
// append of its process. An event is counted when its append succeeds in
// the caller's transaction (Write.Commit); a duplicate idempotency key is not counted, nor
// is an append that fails, but a transaction rolled back after a
// successful append is (rare: the append's own errors count nothing).
// Safe for concurrent use; a nil *Metrics counts nothing.
type Metrics struct {
	appended metric.Int64Counter
	byType   sync.Map // events.Type → metric.AddOption
}

// NewMetrics returns the journal's instruments on mp, or nil (count
// nothing, at no cost) when mp is nil.
func NewMetrics(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		return nil, nil
	}
	c, err := mp.Meter(meterName).Int64Counter("weft.events.appended", metric.WithUnit("{event}"),
		metric.WithDescription("Events newly appended to the event log, by event type."))
	if err != nil {
		return nil, err
	}
	return &Metrics{appended: c}, nil
}

// Option configures a Journal.
type Option func(*Journal)

// WithMetrics counts the Journal's appends on m (nil counts nothing).
func WithMetrics(m *Metrics) Option { return func(j *Journal) { j.metrics = m } }

// count adds the events newly persisted by appends, one Add per event
// type.
func (m *Metrics) count(ctx context.Context, appends []*Appended) {
	if m == nil {
		return
	}
	var n map[events.Type]int64
	for _, a := range appends {
		for i, res := range a.res {
			if res.Persisted {
				if n == nil {
					n = make(map[events.Type]int64, 4)
				}
				n[a.evs[i].EventType]++
			}
		}
	}
	for t, c := range n {
		m.appended.Add(ctx, c, m.typeOption(t))
	}
}

// typeOption returns the cached attribute option of event type t. A type
// this version does not write is counted as "other", so the attribute, and
// the cache, stay bounded.
func (m *Metrics) typeOption(t events.Type) metric.AddOption {
	if !t.Known() {
		t = "other"
	}
	if o, ok := m.byType.Load(t); ok {
		return o.(metric.AddOption)
	}
	o := metric.WithAttributeSet(attribute.NewSet(attribute.String("event_type", string(t))))
	m.byType.Store(t, o)
	return o
}
