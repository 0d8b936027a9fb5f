package tracing

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// Log attribute keys added by LogHandler.
const (
	LogTraceID = "trace_id"
	LogSpanID  = "span_id"
)

// LogHandler wraps a slog.Handler and adds trace_id and span_id to every
// record whose context carries a valid span context (logged with the
// …Context methods). Records without one pass through unchanged. Under a
// group (WithGroup) the ids are added inside the group, as any attribute
// of the record would be. Safe for concurrent use when the wrapped handler
// is.
type LogHandler struct {
	inner slog.Handler
}

// NewLogHandler returns inner wrapped in a LogHandler.
func NewLogHandler(inner slog.Handler) *LogHandler { return &LogHandler{inner: inner} }

// Enabled reports whether the wrapped handler handles level.
func (h *LogHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

// Handle adds the ids of ctx's span to r and passes it on.
func (h *LogHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String(LogTraceID, sc.TraceID().String()), slog.String(LogSpanID, sc.SpanID().String()))
	}
	return h.inner.Handle(ctx, r)
}

// WithAttrs returns a LogHandler over the wrapped handler with attrs.
func (h *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &LogHandler{inner: h.inner.WithAttrs(attrs)}
}

// WithGroup returns a LogHandler over the wrapped handler in group name.
func (h *LogHandler) WithGroup(name string) slog.Handler {
	return &LogHandler{inner: h.inner.WithGroup(name)}
}
