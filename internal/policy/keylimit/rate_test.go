package keylimit_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/keylimit"
)

// clock is a manual clock for the limiter.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newLimiter(t *testing.T, cfg keylimit.Config) (*keylimit.Limiter, *clock) {
	t.Helper()
	c := newClock()
	cfg.Now = c.Now
	l, err := keylimit.New(cfg)
	require.NoError(t, err)
	return l, c
}

func TestAllowBurstThenRefuseThenRefill(t *testing.T) {
	t.Parallel()
	l, c := newLimiter(t, keylimit.Config{Limit: keylimit.Limit{Rate: 10, Burst: 5}})
	for i := range 5 {
		ok, _ := l.Allow("k", 1)
		require.True(t, ok, "request %d of the burst", i+1)
	}
	ok, retry := l.Allow("k", 1)
	require.False(t, ok, "burst+1 is refused")
	require.Equal(t, 100*time.Millisecond, retry, "one token at 10/s")

	c.Advance(retry - time.Millisecond)
	ok, _ = l.Allow("k", 1)
	require.False(t, ok, "a refusal takes no token, and the token is not back early")

	c.Advance(time.Millisecond)
	ok, _ = l.Allow("k", 1)
	require.True(t, ok, "after retryAfter the request passes")
	ok, _ = l.Allow("k", 1)
	require.False(t, ok)
}

func TestAllowOtherKeyUnaffected(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, keylimit.Config{Limit: keylimit.Limit{Rate: 1, Burst: 1}})
	ok, _ := l.Allow("a", 1)
	require.True(t, ok)
	ok, _ = l.Allow("a", 1)
	require.False(t, ok)
	ok, _ = l.Allow("b", 1)
	require.True(t, ok, "b has its own bucket")
}

func TestAllowNCostsN(t *testing.T) {
	t.Parallel()
	l, c := newLimiter(t, keylimit.Config{Limit: keylimit.Limit{Rate: 1, Burst: 10}})
	ok, _ := l.Allow("k", 7)
	require.True(t, ok)
	ok, retry := l.Allow("k", 4)
	require.False(t, ok, "7+4 > 10")
	require.Equal(t, time.Second, retry, "one token short at 1/s")
	ok, _ = l.Allow("k", 3)
	require.True(t, ok, "the refused 4 took nothing: 3 remain")

	c.Advance(10 * time.Second)
	ok, _ = l.Allow("k", 25)
	require.True(t, ok, "n past Burst is charged as Burst: a full bucket passes it")
	ok, retry = l.Allow("k", 25)
	require.False(t, ok, "and empties it")
	require.Equal(t, 10*time.Second, retry)

	c.Advance(10 * time.Second)
	ok, _ = l.Allow("k", 0)
	require.True(t, ok, "n below 1 costs 1")
	ok, _ = l.Allow("k", 10)
	require.False(t, ok, "9 left after the n=0 call")
}

func TestDefaultsAndOff(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, keylimit.Config{})
	require.Equal(t, keylimit.Limit{Rate: keylimit.DefaultRate, Burst: keylimit.DefaultBurst}, l.Limit())
	for range keylimit.DefaultBurst {
		ok, _ := l.Allow("k", 1)
		require.True(t, ok)
	}
	ok, _ := l.Allow("k", 1)
	require.False(t, ok, "the default burst is the edge")

	off, _ := newLimiter(t, keylimit.Config{Limit: keylimit.Off})
	for range 10 * keylimit.DefaultBurst {
		ok, _ := off.Allow("k", 100)
		require.True(t, ok)
	}
	require.Equal(t, 0, off.Keys(), "off holds nothing")
	require.Equal(t, "off", keylimit.Off.String())

	var nilLimiter *keylimit.Limiter
	ok, _ = nilLimiter.Allow("k", 1)
	require.True(t, ok)
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []keylimit.Config{
		{Limit: keylimit.Limit{Rate: 1, Burst: -1}},
		{IdleAfter: -time.Second},
		{MaxKeys: -1},
	} {
		_, err := keylimit.New(cfg)
		require.ErrorIs(t, err, keylimit.ErrConfig, "%+v", cfg)
	}
}

func TestIdleKeysEvicted(t *testing.T) {
	t.Parallel()
	// Burst 10 at 1/s refills in 10s: IdleAfter 1s is raised to 10s.
	l, c := newLimiter(t, keylimit.Config{Limit: keylimit.Limit{Rate: 1, Burst: 10}, IdleAfter: time.Second})
	ok, _ := l.Allow("a", 10)
	require.True(t, ok)
	c.Advance(5 * time.Second)
	l.Allow("b", 1)
	require.Equal(t, 2, l.Keys(), "a is not dropped before its bucket could refill")
	ok, _ = l.Allow("a", 10)
	require.False(t, ok, "a's bucket was kept: 5 tokens, not a fresh 10")

	c.Advance(10*time.Second + time.Nanosecond)
	l.Allow("c", 1)
	require.Equal(t, 1, l.Keys(), "a and b idle past IdleAfter are dropped")
}

func TestMaxKeysDropsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, keylimit.Config{Limit: keylimit.Limit{Rate: 1, Burst: 1}, MaxKeys: 3})
	for i := range 3 {
		l.Allow(fmt.Sprint(i), 1)
	}
	l.Allow("0", 1) // 0 is now the most recent; 1 the least
	l.Allow("3", 1)
	require.Equal(t, 3, l.Keys(), "at most MaxKeys buckets")
	ok, _ := l.Allow("0", 1)
	require.False(t, ok, "0 kept its empty bucket")
	ok, _ = l.Allow("1", 1)
	require.True(t, ok, "1 was dropped and starts full")
}

func TestAllowConcurrentNeverOverAdmits(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, keylimit.Config{Limit: keylimit.Limit{Rate: 1, Burst: 50}})
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for range 200 {
		wg.Go(func() {
			if ok, _ := l.Allow("k", 1); ok {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 50, admitted, "the frozen clock adds no token: exactly the burst passes")
}
