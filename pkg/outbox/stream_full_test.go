package outbox_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// A stream at its MaxBytes refuses new messages (DiscardNew). The relay
// fails loudly (alert=OUTBOX_STREAM_FULL), keeps every refused row without
// charging it, and once the limit is raised publishes them all, in order.
func TestRelayStreamFullKeepsRowsAndAlerts(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := &bundle{db: weftest.NewDB(t), nats: weftest.NewNATS(t)}
	b.js = b.nats.JetStream(t)
	small := streams.Config{MaxBytes: 2048}
	require.NoError(t, streams.Ensure(ctx, b.js, small))

	var want []outbox.Message
	for seq := 1; seq <= 40; seq++ {
		want = append(want, msg("full", seq))
	}
	enqueue(t, b.db.Pool, want...)
	logs := &weftest.Buffer{}
	cfg := fastConfig()
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	r := b.startRelay(t, b.db.Pool, cfg)

	require.Eventually(t, func() bool { return strings.Contains(logs.String(), `"alert":"OUTBOX_STREAM_FULL"`) },
		waitFor, 5*time.Millisecond, "the relay alerts on a full stream")
	stored := streamMsgs(t, b.js)
	require.Less(t, stored, uint64(len(want)), "the stream took only what fits")
	require.Equal(t, len(want)-int(stored), count(t, b.db.Pool, "outbox"), "every refused row is kept")
	require.Zero(t, count(t, b.db.Pool, "outbox_dead"))
	require.Zero(t, r.Stats().Failures, "a full stream is not charged to rows")

	require.NoError(t, streams.Ensure(ctx, b.js, streams.Config{MaxBytes: 1 << 20}))
	b.waitDrained(t, len(want))
	requireExactlyOnceInOrder(t, readStream(t, b.js), map[string]int{"full": len(want)})
}
