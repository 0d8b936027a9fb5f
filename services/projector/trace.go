package projector

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/tracing"
)

// tracerName names the projector's tracer.
const tracerName = "github.com/weftrun/weft/services/projector"

// applySpans are the spans of one batch's messages, each parented to its
// message's trace context and covering the batch's transaction.
type applySpans []trace.Span

// startApplySpans opens a span per message; none without a provider, as
// the projector writes nothing to the bus a context could pass on to.
func startApplySpans(ctx context.Context, tp trace.TracerProvider, msgs []jetstream.Msg) applySpans {
	if tp == nil {
		return nil
	}
	tracer := tp.Tracer(tracerName)
	spans := make(applySpans, len(msgs))
	for i, m := range msgs {
		_, spans[i] = tracer.Start(tracing.ExtractNATS(ctx, m.Headers()), "projector apply",
			trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(attribute.String("messaging.source.name", m.Subject()),
				attribute.String("weft.event_type", messageTypes(m)),
				attribute.Int("weft.batch_size", len(msgs))))
	}
	return spans
}

// end closes the spans, with an error status when the batch failed.
func (s applySpans) end(err error) {
	for _, span := range s {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// messageTypes returns the event type of an event message, or the types of
// a batch, comma-separated (streams.HeaderEventTypes).
func messageTypes(m jetstream.Msg) string {
	if t := m.Headers().Get(streams.HeaderEventType); t != "" {
		return t
	}
	return m.Headers().Get(streams.HeaderEventTypes)
}
