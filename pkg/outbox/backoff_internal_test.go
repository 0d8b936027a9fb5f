package outbox

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoffGrowsWithJitterWithinBounds(t *testing.T) {
	t.Parallel()
	cfg := RelayConfig{InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Jitter: 0.5}.WithDefaults()
	ms := time.Millisecond
	bases := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1000 * ms, 1000 * ms}
	for n, base := range bases {
		for range 200 {
			d := cfg.backoff(n + 1)
			require.GreaterOrEqual(t, d, base, "failure %d", n+1)
			require.LessOrEqual(t, d, base+base/2, "failure %d", n+1)
			require.LessOrEqual(t, d, cfg.maxDelay(n+1))
		}
	}
	off := RelayConfig{Jitter: -1}.WithDefaults()
	require.Equal(t, DefaultInitialBackoff, off.backoff(1), "no jitter")
	require.Equal(t, DefaultMaxBackoff, off.backoff(1000), "capped, no overflow")
}
