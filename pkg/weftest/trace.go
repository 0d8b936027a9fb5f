package weftest

import (
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// RemoteParent returns the sampled, remote span context of the hex trace
// and span ids: a caller's traceparent, as a test's request carries it.
func RemoteParent(t testing.TB, traceID, spanID string) trace.SpanContext {
	t.Helper()
	tid, err := trace.TraceIDFromHex(traceID)
	if err != nil {
		t.Fatalf("weftest: trace id %q: %v", traceID, err)
	}
	sid, err := trace.SpanIDFromHex(spanID)
	if err != nil {
		t.Fatalf("weftest: span id %q: %v", spanID, err)
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}
