package engine

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/tracing"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// tracerName names the engine's tracer.
const tracerName = "github.com/weftrun/weft/services/engine"

// roundSpans are the spans of one batch's rounds, in round order.
type roundSpans []trace.Span

// start opens the span of the round m asks for, parented to the trace
// context in m's headers, and returns the span's context for the round to
// write into its events and tasks. Without a provider the span is a no-op
// one that carries m's context, so the context still passes through.
func (s *roundSpans) start(ctx context.Context, tracer trace.Tracer, m jetstream.Msg, runID string) trace.SpanContext {
	mctx := tracing.ExtractNATS(ctx, m.Headers())
	_, span := tracer.Start(mctx, "engine round", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("weft.run_id", runID), attribute.String("messaging.source.name", m.Subject())))
	*s = append(*s, span)
	return span.SpanContext()
}

// context returns ctx carrying the span of round i, for its logs.
func (s roundSpans) context(ctx context.Context, i int) context.Context {
	return trace.ContextWithSpan(ctx, s[i])
}

// end closes the spans with their rounds' outcomes; nil results means the
// batch was cut short and every round will run again.
func (s roundSpans) end(results []round.Result) {
	for i, span := range s {
		switch {
		case results == nil:
			span.SetStatus(codes.Error, "rounds cut short; the message will be redelivered")
		case results[i].Err != nil:
			span.SetStatus(codes.Error, results[i].Err.Error())
		}
		span.End()
	}
}
