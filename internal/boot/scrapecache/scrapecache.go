// Package scrapecache keeps what an observable instrument reads at scrape
// time (a count over a table, a JetStream request) for a short TTL, so a
// burst of scrapes, or several scrapers of one process, cost one read.
package scrapecache

import (
	"context"
	"sync"
	"time"
)

// DefaultTTL is how long a read stays fresh when New is given a TTL of
// zero: well under a scrape interval, so a gauge is at most that stale.
const DefaultTTL = 5 * time.Second

// Cache holds the last successful result of read for TTL. It is safe for
// concurrent use; concurrent Gets of a stale value wait for one read.
type Cache[T any] struct {
	ttl  time.Duration
	read func(context.Context) (T, error)
	now  func() time.Time

	mu  sync.Mutex
	at  time.Time // when val was read; zero before the first read
	val T
}

// New returns a Cache of read's result. A ttl of zero or less means
// DefaultTTL.
func New[T any](ttl time.Duration, read func(context.Context) (T, error)) *Cache[T] {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Cache[T]{ttl: ttl, read: read, now: time.Now}
}

// Get returns the value read less than TTL ago, or reads it anew with ctx.
// A failed read is not kept: Get returns its error, and the next Get reads
// again.
func (c *Cache[T]) Get(ctx context.Context) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if !c.at.IsZero() && now.Sub(c.at) < c.ttl {
		return c.val, nil
	}
	v, err := c.read(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	c.val, c.at = v, now
	return v, nil
}
