package client

import (
	"context"
	"time"

	"github.com/weftrun/weft/pkg/periodic"
)

// Test seams, exported to the client_test package only.

// WithSleep replaces the wait between attempts.
func WithSleep(sleep func(context.Context, time.Duration) error) Option {
	return func(c *Client) error {
		c.sleep = sleep
		return nil
	}
}

// WithNow replaces the clock that serves HTTP-date Retry-After headers.
func WithNow(now func() time.Time) Option {
	return func(c *Client) error {
		c.now = now
		return nil
	}
}

// WithoutJitter makes every backoff its ceiling, so waits are predictable.
func WithoutJitter() Option {
	return func(c *Client) error {
		c.jitter = func(d time.Duration) time.Duration { return d }
		return nil
	}
}

// SleepCtx is the default wait, for tests that need a real one.
var SleepCtx = periodic.Sleep
