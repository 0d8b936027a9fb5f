// Package periodic holds the one periodic loop and the one interruptible
// sleep of Weft's long-running components: both wait on the clock for as
// long as their context lasts, and no longer.
package periodic

import (
	"context"
	"log/slog"
	"time"
)

// Sleep waits d, or less when ctx ends. It returns nil once d has passed,
// and ctx.Err() when ctx ended first or had ended already, whatever d. A d
// of zero or less returns at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Loop calls a function every Interval until its context ends. The zero
// Loop is not usable: Interval must be set.
type Loop struct {
	// Interval is the period of the calls, as a time.Ticker keeps it; it
	// must be positive. Calls never overlap: one that lasts longer than
	// Interval is followed by the next at once, and the ticks it covered
	// are dropped.
	Interval time.Duration
	// Immediate makes the first call as Run starts; without it the first
	// call comes one Interval later.
	Immediate bool
	// Logger receives the errors of the calls; nil discards them.
	Logger *slog.Logger
	// Failed is the message an error is logged with, at Warn, under the
	// key "err": "retention: pass failed".
	Failed string
}

// Run calls fn with ctx every Interval (the first time at once when
// Immediate, even when ctx has ended) until ctx ends, and returns once ctx
// has ended and the call in progress has returned. An error fn returns
// while ctx lasts is logged, and the loop goes on; one returned once ctx
// has ended is not. Run panics when Interval is not positive.
func (l Loop) Run(ctx context.Context, fn func(context.Context) error) {
	t := time.NewTicker(l.Interval)
	defer t.Stop()
	if l.Immediate {
		l.call(ctx, fn)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.call(ctx, fn)
	}
}

// call calls fn and logs its error unless ctx has ended.
func (l Loop) call(ctx context.Context, fn func(context.Context) error) {
	if err := fn(ctx); err != nil && ctx.Err() == nil && l.Logger != nil {
		l.Logger.WarnContext(ctx, l.Failed, "err", err)
	}
}
