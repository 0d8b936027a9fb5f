package startstop

import (
	"context"
	"time"
)

// Service is a component with this package's lifecycle, as a Base gives
// it.
type Service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Run runs s for as long as ctx lasts, the shape of a service's
// Run(ctx): it starts s, waits for ctx to end, and stops s with a drain of
// at most drain (zero or less: until the drain is done). The end of ctx
// while s starts aborts the start, or stops s at once if it started
// anyway; once s runs, the end of ctx asks for the drain, not a hard stop.
// Run returns Start's error, or Stop's (wrapping ErrDrainCutShort).
func Run(ctx context.Context, s Service, drain time.Duration) error {
	runCtx, hard := context.WithCancel(context.WithoutCancel(ctx))
	defer hard()
	detach := context.AfterFunc(ctx, hard)
	if err := s.Start(runCtx); err != nil {
		return err
	}
	if detach() { // started before ctx ended: its end is a drain
		<-ctx.Done()
	}
	stopCtx := context.WithoutCancel(ctx)
	if drain > 0 {
		var cancel context.CancelFunc
		stopCtx, cancel = context.WithTimeout(stopCtx, drain)
		defer cancel()
	}
	return s.Stop(stopCtx)
}
