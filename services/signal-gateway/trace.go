package gateway

import (
	"context"
	"net/http"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/tracing"
)

// tracerName names the gateway's tracer.
const tracerName = "github.com/weftrun/weft/services/signal-gateway"

// untraced are the paths whose requests get no span: probes and scrapes.
var untraced = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// traced wraps next so that each request runs under a server span that
// continues the caller's traceparent, when it sends one; the runs and
// signals the request commits carry the span's context to the bus. Without
// a TracerProvider the caller's context still passes through.
func (s *Service) traced(next http.Handler) http.Handler {
	tracer := s.tracer
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if untraced[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		ctx, span := tracer.Start(tracing.ExtractHTTP(r.Context(), r.Header), "gateway "+r.Method,
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		r = r.WithContext(ctx)
		next.ServeHTTP(sw, r)
		if r.Pattern != "" {
			span.SetName("gateway " + r.Pattern)
			span.SetAttributes(attribute.String("http.route", r.Pattern))
		}
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	})
}

// statusWriter records the status a handler writes.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records status and passes it on.
func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// natsSpan starts the span of one NATS ingress message, continuing the
// trace context in its headers.
func (s *Service) natsSpan(ctx context.Context, m *nats.Msg) (context.Context, trace.Span) {
	return s.tracer.Start(tracing.ExtractNATS(ctx, m.Header), "gateway nats",
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("messaging.system", "nats"), attribute.String("messaging.destination.name", m.Subject)))
}

// endNATSSpan closes an ingress span with the status the reply carried.
func endNATSSpan(span trace.Span, status int, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.SetAttributes(attribute.Int("weft.status", status))
	span.End()
}
