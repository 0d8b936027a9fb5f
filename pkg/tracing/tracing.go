// Package tracing carries W3C trace context (traceparent, tracestate)
// across Weft's hops: HTTP requests, NATS message headers, and the outbox's
// persisted headers, so one trace follows a run's request or a signal from
// the gateway through the outbox, the engine and the workers to the
// projector (docs/observability.md). It also tags slog records with the
// trace and span ids of their context.
//
// Every service takes its trace.TracerProvider explicitly; Tracer turns a
// nil provider into a no-op tracer. A no-op tracer still passes a remote
// parent through (its spans carry the parent's context), so an untraced
// hop does not break a chain. The providers themselves are built by
// internal/boot/traceboot.
package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Header names of the W3C trace context, as Weft writes them.
const (
	HeaderTraceparent = "traceparent"
	HeaderTracestate  = "tracestate"
)

// Tracer returns tp's tracer called name, or a no-op tracer when tp is nil.
// A span started from a no-op tracer carries its parent's span context.
func Tracer(tp trace.TracerProvider, name string) trace.Tracer {
	if tp == nil {
		return noop.NewTracerProvider().Tracer(name)
	}
	return tp.Tracer(name)
}

// propagator is the W3C trace-context propagator; it holds no state.
func propagator() propagation.TraceContext { return propagation.TraceContext{} }

// ExtractHTTP returns ctx with the remote span context carried by h's
// traceparent and tracestate, or ctx itself when h carries none (or an
// invalid one).
func ExtractHTTP(ctx context.Context, h http.Header) context.Context {
	return propagator().Extract(ctx, propagation.HeaderCarrier(h))
}

// InjectHeaders writes the span context of ctx into h as traceparent (and
// tracestate when set), allocating h when it is nil, and returns h. When
// ctx carries no valid span context it returns h unchanged.
func InjectHeaders(ctx context.Context, h map[string]string) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return h
	}
	if h == nil {
		h = make(map[string]string, 2)
	}
	propagator().Inject(ctx, propagation.MapCarrier(h))
	return h
}

// ExtractHeaders is ExtractHTTP for the outbox's map of headers.
func ExtractHeaders(ctx context.Context, h map[string]string) context.Context {
	if h[HeaderTraceparent] == "" {
		return ctx
	}
	return propagator().Extract(ctx, propagation.MapCarrier(h))
}

// WithSpanContext returns ctx carrying sc as its (remote) span context, for
// code that kept a span context apart from its ctx, such as one round of an
// engine batch. An invalid sc leaves ctx as it is.
func WithSpanContext(ctx context.Context, sc trace.SpanContext) context.Context {
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, sc)
}
