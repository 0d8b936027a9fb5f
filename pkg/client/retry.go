package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Defaults of a zero RetryPolicy field.
const (
	// DefaultMaxAttempts is how many times a request is sent at most,
	// counting the first.
	DefaultMaxAttempts = 5
	// DefaultInitialBackoff caps the wait before the first retry.
	DefaultInitialBackoff = 100 * time.Millisecond
	// DefaultMaxBackoff caps the wait before any retry (a longer
	// Retry-After still wins).
	DefaultMaxBackoff = 5 * time.Second
	// DefaultMultiplier is how much the cap grows from one retry to the
	// next.
	DefaultMultiplier = 2.0
)

// RetryPolicy says how often and how patiently a request is retried. The
// zero value of each field means its default; WithRetry validates the
// result.
//
// The wait before retry n (n = 1 after the first attempt) is drawn
// uniformly from [0, min(MaxBackoff, InitialBackoff·Multiplier^(n-1))]
// ("full jitter"); when the answer carried a longer Retry-After, the client
// waits that long instead.
type RetryPolicy struct {
	// MaxAttempts is how many times a request is sent at most, counting
	// the first; 1 turns retries off. Default DefaultMaxAttempts.
	MaxAttempts int
	// InitialBackoff caps the first wait. Default DefaultInitialBackoff.
	InitialBackoff time.Duration
	// MaxBackoff caps every wait; at least InitialBackoff. Default
	// DefaultMaxBackoff.
	MaxBackoff time.Duration
	// Multiplier grows the cap per retry; at least 1. Default
	// DefaultMultiplier.
	Multiplier float64
}

// withDefaults returns p with each zero field set to its default.
func (p RetryPolicy) withDefaults() RetryPolicy {
	p.MaxAttempts = cmp.Or(p.MaxAttempts, DefaultMaxAttempts)
	p.InitialBackoff = cmp.Or(p.InitialBackoff, DefaultInitialBackoff)
	p.MaxBackoff = cmp.Or(p.MaxBackoff, DefaultMaxBackoff)
	p.Multiplier = cmp.Or(p.Multiplier, DefaultMultiplier)
	return p
}

// validate checks a policy with its defaults applied.
func (p RetryPolicy) validate() error {
	switch {
	case p.MaxAttempts < 1:
		return fmt.Errorf("%w: RetryPolicy.MaxAttempts %d is below 1", ErrInvalidConfig, p.MaxAttempts)
	case p.InitialBackoff < 0:
		return fmt.Errorf("%w: RetryPolicy.InitialBackoff %s is negative", ErrInvalidConfig, p.InitialBackoff)
	case p.MaxBackoff < p.InitialBackoff:
		return fmt.Errorf("%w: RetryPolicy.MaxBackoff %s is below InitialBackoff %s",
			ErrInvalidConfig, p.MaxBackoff, p.InitialBackoff)
	case !(p.Multiplier >= 1) || math.IsInf(p.Multiplier, 1):
		return fmt.Errorf("%w: RetryPolicy.Multiplier %v is not a finite number >= 1", ErrInvalidConfig, p.Multiplier)
	}
	return nil
}

// ceiling is the cap of the wait before retry n (n >= 1).
func (p RetryPolicy) ceiling(n int) time.Duration {
	d := float64(p.InitialBackoff) * math.Pow(p.Multiplier, float64(n-1))
	if d >= float64(p.MaxBackoff) {
		return p.MaxBackoff
	}
	return time.Duration(d)
}

// fullJitter draws a wait uniformly from [0, ceiling].
func fullJitter(ceiling time.Duration) time.Duration {
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling + 1)
}

// wait is the pause before retry n after the failure err: the jittered
// backoff, or the answer's Retry-After when that is longer.
func (c *Client) wait(n int, err error) time.Duration {
	d := c.jitter(c.retry.ceiling(n))
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > d {
		d = e.RetryAfter
	}
	return d
}

// withRetries runs attempt until it succeeds, fails in a way a retry cannot
// mend, the policy's attempts run out, or ctx ends. A failure after more
// than one attempt is wrapped with the count; the last attempt's error stays
// in the chain.
func (c *Client) withRetries(ctx context.Context, attempt func(context.Context) error) error {
	for n := 1; ; n++ {
		err := attempt(ctx)
		switch {
		case err == nil:
			return nil
		case n >= c.retry.MaxAttempts || !retryable(ctx.Err(), err):
			if n == 1 {
				return err
			}
			return fmt.Errorf("client: failed after %d attempts: %w", n, err)
		}
		d := c.wait(n, err)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
			return fmt.Errorf("client: failed after %d attempts (the next, in %s, would be past the context's deadline): %w",
				n, d, err)
		}
		if werr := c.sleep(ctx, d); werr != nil {
			return fmt.Errorf("client: %w while waiting to retry after %d attempts: %w", werr, n, err)
		}
	}
}
