package outbox_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
)

// TestRelayMetrics: while rows wait, weft.outbox.depth counts them and
// weft.outbox.oldest_age is set; once the relay has drained them depth is
// back to 0, every row's enqueue→ack latency is in the histogram and the
// relayed counter says published.
func TestRelayMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 5
	for seq := 1; seq <= n; seq++ {
		enqueue(t, b.db.Pool, msg("metrics", seq))
	}
	mp, h, err := metrics.New()
	require.NoError(t, err)
	cfg := fastConfig()
	cfg.MeterProvider = mp
	claimed, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	cfg.TestingKnobs.BeforePublish = func() {
		once.Do(func() { close(claimed) })
		<-release // hold every batch until the pending rows were scraped
	}
	b.startRelay(t, b.db.Pool, cfg)

	<-claimed
	s := metricstest.Get(t, h)
	close(release)
	require.Equal(t, int64(n), s.Count(t, "weft_outbox_depth", nil))
	require.GreaterOrEqual(t, s.Value(t, "weft_outbox_oldest_age_seconds", nil), 0.0)
	require.Zero(t, s.Count(t, "weft_outbox_relayed_total", map[string]string{"result": "published"}))

	b.waitDrained(t, n)
	// The depth is kept for a few seconds (scrapecache): wait for a read
	// after the drain.
	s = metricstest.WaitFor(t, h, waitFor, func(s metricstest.Scrape) bool {
		v, ok := s.Sum("weft_outbox_relayed_total", map[string]string{"result": "published"})
		d, okD := s.Sum("weft_outbox_depth", nil)
		return ok && okD && v == n && d == 0
	})
	require.Zero(t, s.Value(t, "weft_outbox_oldest_age_seconds", nil))
	require.Equal(t, int64(n), s.Count(t, "weft_outbox_publish_latency_seconds_count", nil))
	require.Zero(t, s.Count(t, "weft_outbox_relayed_total", map[string]string{"result": "dead_lettered"}))
}
