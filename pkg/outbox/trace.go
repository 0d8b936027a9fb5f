package outbox

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/tracing"
)

// tracerName names the relay's tracer.
const tracerName = "github.com/weftrun/weft/pkg/outbox"

// publishSpans are the publish spans of one batch, by row index. Its zero
// value (a relay without TracerProvider) traces nothing and allocates
// nothing: the stored headers are published as they are.
type publishSpans struct {
	tracer trace.Tracer
	spans  []trace.Span
}

// newPublishSpans returns the span slots of a batch of n rows.
func (r *Relay) newPublishSpans(n int) publishSpans {
	if r.cfg.TracerProvider == nil {
		return publishSpans{}
	}
	return publishSpans{tracer: r.cfg.TracerProvider.Tracer(tracerName), spans: make([]trace.Span, n)}
}

// start opens the publish span of row i when the row carries a trace
// context, and writes the span's context into m in place of the stored one.
func (s publishSpans) start(ctx context.Context, i int, rw row, m *nats.Msg) {
	if s.tracer == nil || rw.headers[tracing.HeaderTraceparent] == "" {
		return
	}
	pctx := tracing.ExtractHeaders(ctx, rw.headers)
	pctx, span := s.tracer.Start(pctx, "outbox publish", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("messaging.system", "nats"),
			attribute.String("messaging.destination.name", rw.subject),
			attribute.String("messaging.message.id", rw.dedupeID)))
	tracing.InjectNATS(pctx, m)
	s.spans[i] = span
}

// end closes every open span with its row's outcome.
func (s publishSpans) end(out []outcome) {
	for i, span := range s.spans {
		if span == nil {
			continue
		}
		if i < len(out) && out[i].err != nil {
			span.SetStatus(codes.Error, out[i].err.Error())
		}
		span.End()
	}
}
