package intake

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The counter counts per run within a RateWindow, starts again in the
// next one, and counts a clock that went back in the window it has.
func TestDenialCounterWindows(t *testing.T) {
	t.Parallel()
	var d denialCounter
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	n, end := d.add("r1", t0)
	require.Equal(t, 1, n)
	require.Equal(t, t0.Add(RateWindow), end)
	n, _ = d.add("r1", t0.Add(RateWindow-time.Nanosecond))
	require.Equal(t, 2, n, "the window's last instant")
	n, _ = d.add("r2", t0)
	require.Equal(t, 1, n, "per run")
	n, end = d.add("r1", t0.Add(RateWindow))
	require.Equal(t, 1, n, "the next window starts again")
	require.Equal(t, t0.Add(2*RateWindow), end)
	n, _ = d.add("r1", t0)
	require.Equal(t, 2, n, "a clock gone back counts in the current window")
}

// One key per (run, API key, window): the key id is escaped, so keys
// cannot collide through the separator.
func TestRejectedKey(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 2, 9, 0, 30, 0, time.UTC)
	k := rejectedKey("r1", "viewer", t0, time.Minute)
	require.Equal(t, "rejected:r1:key:viewer:2026-03-02T09:00:00Z", k)
	require.Equal(t, k, rejectedKey("r1", "viewer", t0.Add(29*time.Second), time.Minute))
	require.NotEqual(t, k, rejectedKey("r1", "viewer", t0.Add(30*time.Second), time.Minute))
	require.NotEqual(t, rejectedKey("r1", "a:b", t0, time.Minute), rejectedKey("r1", "a", t0, time.Minute))
	require.Contains(t, rejectedKey("r1", "a:b", t0, time.Minute), "a%3Ab")
}
