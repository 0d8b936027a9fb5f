package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/tracing"
)

const (
	traceHex = "0af7651916cd43dd8448eb211c80319c"
	spanHex  = "b7ad6b7169203331"
	header   = "00-" + traceHex + "-" + spanHex + "-01"
)

// parent is the remote caller's span context that header carries.
func parent() trace.SpanContext {
	tid, _ := trace.TraceIDFromHex(traceHex)
	sid, _ := trace.SpanIDFromHex(spanHex)
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

func spanCtx(t *testing.T) context.Context { return tracing.WithSpanContext(t.Context(), parent()) }

func TestInjectHeaders(t *testing.T) {
	t.Parallel()
	t.Run("no span leaves the map alone", func(t *testing.T) {
		t.Parallel()
		require.Nil(t, tracing.InjectHeaders(t.Context(), nil))
		h := map[string]string{"A": "1"}
		require.Equal(t, map[string]string{"A": "1"}, tracing.InjectHeaders(t.Context(), h))
	})
	t.Run("span writes traceparent, keeping other headers", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, map[string]string{"traceparent": header}, tracing.InjectHeaders(spanCtx(t), nil))
		h := tracing.InjectHeaders(spanCtx(t), map[string]string{"A": "1"})
		require.Equal(t, map[string]string{"A": "1", "traceparent": header}, h)
	})
}

func TestExtractRoundTrips(t *testing.T) {
	t.Parallel()
	want := parent()
	got := trace.SpanContextFromContext(tracing.ExtractHeaders(t.Context(), map[string]string{"traceparent": header}))
	require.True(t, want.Equal(got), "got %v", got)
	got = trace.SpanContextFromContext(tracing.ExtractHTTP(t.Context(), http.Header{"Traceparent": {header}}))
	require.True(t, want.Equal(got), "got %v", got)

	require.False(t, trace.SpanContextFromContext(tracing.ExtractHeaders(t.Context(), nil)).IsValid())
	bad := tracing.ExtractHeaders(t.Context(), map[string]string{"traceparent": "00-zz-yy-01"})
	require.False(t, trace.SpanContextFromContext(bad).IsValid())
}

func TestNATSCarrier(t *testing.T) {
	t.Parallel()
	c := tracing.NATSCarrier(nats.Header{"Traceparent": {header}, "Other": {"x"}})
	require.Equal(t, header, c.Get("traceparent"), "found case-insensitively")
	require.Empty(t, c.Get("tracestate"))
	c.Set("tracestate", "k=v")
	require.Equal(t, []string{"k=v"}, c["tracestate"], "set under the exact name")
	require.ElementsMatch(t, []string{"Traceparent", "Other", "tracestate"}, c.Keys())

	m := nats.NewMsg("s")
	m.Header = nil
	tracing.InjectNATS(t.Context(), m)
	require.Nil(t, m.Header, "no span, no header")
	tracing.InjectNATS(spanCtx(t), m)
	require.Equal(t, header, m.Header.Get("traceparent"))

	got := trace.SpanContextFromContext(tracing.ExtractNATS(t.Context(), m.Header))
	require.Equal(t, traceHex, got.TraceID().String())
	require.Equal(t, spanHex, got.SpanID().String())
	require.False(t, trace.SpanContextFromContext(tracing.ExtractNATS(t.Context(), nil)).IsValid())
}

func TestTracerNilProviderPassesContextThrough(t *testing.T) {
	t.Parallel()
	ctx, span := tracing.Tracer(nil, "test").Start(spanCtx(t), "x")
	defer span.End()
	require.False(t, span.IsRecording())
	require.Equal(t, traceHex, trace.SpanContextFromContext(ctx).TraceID().String())
	require.Equal(t, header, tracing.InjectHeaders(ctx, nil)["traceparent"])
}

func TestLogHandlerAddsIDs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(tracing.NewLogHandler(slog.NewJSONHandler(&buf, nil))).With("service", "s")
	log.InfoContext(spanCtx(t), "traced")
	log.InfoContext(t.Context(), "untraced")

	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	require.Len(t, lines, 2)
	var traced, untraced map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &traced))
	require.NoError(t, json.Unmarshal(lines[1], &untraced))
	require.Equal(t, traceHex, traced[tracing.LogTraceID])
	require.Equal(t, spanHex, traced[tracing.LogSpanID])
	require.Equal(t, "s", traced["service"])
	require.NotContains(t, untraced, tracing.LogTraceID)
	require.NotContains(t, untraced, tracing.LogSpanID)
}
