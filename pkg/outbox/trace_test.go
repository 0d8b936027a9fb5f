package outbox_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/tracing"
	"github.com/weftrun/weft/pkg/weftest"
)

const (
	enqueueTrace = "0af7651916cd43dd8448eb211c80319c"
	enqueueSpan  = "b7ad6b7169203331"
	traceparent  = "00-" + enqueueTrace + "-" + enqueueSpan + "-01"
)

// tracedCtx carries the span context a gateway request would have.
func tracedCtx(t *testing.T) context.Context {
	t.Helper()
	ctx := tracing.ExtractHeaders(testCtx(t), map[string]string{"traceparent": traceparent})
	require.True(t, trace.SpanContextFromContext(ctx).IsValid())
	return ctx
}

func storedHeaders(t *testing.T, db *weftest.DB) map[string]map[string]string {
	t.Helper()
	rows, err := db.Pool.Query(testCtx(t), `SELECT dedupe_id, headers FROM outbox`)
	require.NoError(t, err)
	defer rows.Close()
	got := map[string]map[string]string{}
	for rows.Next() {
		var id string
		var h map[string]string
		require.NoError(t, rows.Scan(&id, &h))
		got[id] = h
	}
	require.NoError(t, rows.Err())
	return got
}

func TestEnqueueTxStoresTraceContext(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	plain, own, untraced := msg("run-a", 1), msg("run-a", 2), msg("run-b", 1)
	own.Headers = map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	ctx := tracedCtx(t)
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error { return outbox.EnqueueTx(ctx, tx, plain, own) }))
	enqueue(t, db.Pool, untraced) // no span in its ctx

	got := storedHeaders(t, db)
	require.Equal(t, map[string]string{"Weft-Run-Seq": "1", "traceparent": traceparent}, got[plain.DedupeID])
	require.Equal(t, own.Headers, got[own.DedupeID], "a message's own traceparent is kept")
	require.Equal(t, untraced.Headers, got[untraced.DedupeID])
	require.Equal(t, map[string]string{"Weft-Run-Seq": "1"}, plain.Headers, "the caller's map is not modified")
}

// TestRelayPublishSpan checks that a traced relay publishes a row under a
// producer span parented to the stored context and sends the span's
// context, and that an untraced relay sends the stored context as is.
func TestRelayPublishSpan(t *testing.T) {
	t.Parallel()
	for _, traced := range []bool{true, false} {
		b := setup(t)
		exp := tracetest.NewInMemoryExporter()
		cfg := fastConfig()
		if traced {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
			cfg.TracerProvider = tp
		}
		ctx := tracedCtx(t)
		m := msg("run-a", 1)
		require.NoError(t, pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error { return outbox.EnqueueTx(ctx, tx, m) }))
		b.startRelay(t, b.db.Pool, cfg)
		b.waitDrained(t, 1)

		stream, err := b.js.Stream(testCtx(t), streams.EventsStream)
		require.NoError(t, err)
		filter, err := streams.RunEventsFilter("run-a") // stored as weft.events.<partition>.out.run-a
		require.NoError(t, err)
		raw, err := stream.GetLastMsgForSubject(testCtx(t), filter)
		require.NoError(t, err)
		sent := trace.SpanContextFromContext(tracing.ExtractNATS(testCtx(t), raw.Header))
		require.Equal(t, enqueueTrace, sent.TraceID().String())
		if !traced {
			require.Equal(t, traceparent, raw.Header.Get("traceparent"))
			require.Empty(t, exp.GetSpans())
			continue
		}
		spans := exp.GetSpans()
		require.Len(t, spans, 1)
		require.Equal(t, "outbox publish", spans[0].Name)
		require.Equal(t, trace.SpanKindProducer, spans[0].SpanKind)
		require.Equal(t, enqueueSpan, spans[0].Parent.SpanID().String())
		require.Equal(t, spans[0].SpanContext.SpanID(), sent.SpanID(), "the message carries the publish span")
	}
}
