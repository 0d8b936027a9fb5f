package scrapecache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// clockedCache is a Cache of a counting read, on a clock the test moves.
func clockedCache(t *testing.T, ttl time.Duration, fail *bool) (c *Cache[int], reads *int, clock *time.Time) {
	t.Helper()
	reads, clock = new(int), new(time.Time)
	*clock = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c = New(ttl, func(context.Context) (int, error) {
		if *fail {
			return 0, errors.New("read failed")
		}
		*reads++
		return *reads, nil
	})
	c.now = func() time.Time { return *clock }
	return c, reads, clock
}

// TestGetReadsOncePerTTL: Gets within the TTL share one read; the first
// Get at or after it reads again.
func TestGetReadsOncePerTTL(t *testing.T) {
	t.Parallel()
	fail := false
	c, reads, clock := clockedCache(t, time.Second, &fail)
	for range 3 {
		v, err := c.Get(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, v)
	}
	*clock = clock.Add(999 * time.Millisecond)
	v, err := c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, v, "still fresh just before the TTL")
	*clock = clock.Add(time.Millisecond)
	v, err = c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, v, "read again at the TTL")
	require.Equal(t, 2, *reads)
}

// TestFailedReadIsNotKept: a failed read returns its error and leaves
// nothing behind, so the next Get reads again.
func TestFailedReadIsNotKept(t *testing.T) {
	t.Parallel()
	fail := true
	c, reads, _ := clockedCache(t, time.Minute, &fail)
	_, err := c.Get(t.Context())
	require.Error(t, err)
	fail = false
	v, err := c.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, v)
	require.Equal(t, 1, *reads)
}

// TestZeroTTLMeansDefault: New applies DefaultTTL to a zero TTL.
func TestZeroTTLMeansDefault(t *testing.T) {
	t.Parallel()
	c := New(0, func(context.Context) (int, error) { return 0, nil })
	require.Equal(t, DefaultTTL, c.ttl)
}
