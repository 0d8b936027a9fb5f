package engine

import (
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/weftrun/weft/internal/testkit/metrictest"
)

// A lookup whose reply subject is not a worker inbox is dropped before it
// is decoded or answered, and counted (issue #36): an answer on
// weft.cancel.<runId>, weft.events.… or the JetStream API would be a
// message published there with the engine's rights.
func TestReconcileDropsNonInboxReply(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	refused, err := newReplyRefusedCounter(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	require.NoError(t, err)
	// No pool and no connection: a lookup that got past the check would
	// panic or fail to respond, never count.
	s := &Service{cfg: Config{}.withDefaults(), logger: slog.New(slog.DiscardHandler), replyRefused: refused}
	for _, reply := range []string{"weft.cancel.r1", "weft.events.t2.r2", "$JS.API.STREAM.PURGE.WEFT_RESULTS", "_INBOX_worker", "_INBOX_workerX.a"} {
		s.answerReconcile(t.Context(), &nats.Msg{Subject: "weft.engine.reconcile", Reply: reply, Data: []byte(`{}`)})
	}
	require.Equal(t, int64(5), refusedCount(t, reader))
	for _, reply := range []string{"_INBOX_worker.abc", "_INBOX_worker-gpu.abc", "_INBOX.abc"} {
		require.True(t, s.reconcileReplyAllowed(reply), reply)
	}
}

func refusedCount(t *testing.T, r *sdkmetric.ManualReader) int64 {
	t.Helper()
	return metrictest.Sum(t, r, "weft.engine.lookups.reply_refused")
}
