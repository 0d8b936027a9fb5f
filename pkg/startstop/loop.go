package startstop

import (
	"context"
	"errors"
	"sync"
)

// Loop is a Service made of a function that runs until its context ends,
// the shape of a service's Run(ctx), a periodic job or a listener's
// Serve: Start calls Run on a goroutine, Stop ends Run's context and
// waits for it to return. Run's context is the soft one: a Run that
// drains (a listener finishing its requests) does so when Stop asks, and
// Stop's context bounds the wait.
//
// Run must return once its context ends. Stop returns Run's error,
// except context.Canceled, which a Run gives when its context ends and is
// a clean stop; a Run that returns early by itself has its error kept for
// Stop. Build a Loop with a Run and do not copy it after Start.
type Loop struct {
	Run func(ctx context.Context) error

	life Base
	mu   sync.Mutex
	err  error // Run's, once it returned
}

// Start launches Run. It returns ErrAlreadyStarted on a second call.
func (l *Loop) Start(ctx context.Context) error {
	return l.life.Start(ctx, func(_, soft context.Context) (func(), error) {
		return func() {
			err := l.Run(soft)
			l.mu.Lock()
			l.err = err
			l.mu.Unlock()
		}, nil
	})
}

// Stop ends Run's context and waits for Run to return, or for ctx to end
// (then it returns an error wrapping ErrDrainCutShort once Run has
// returned). It returns Run's error but context.Canceled.
func (l *Loop) Stop(ctx context.Context) error {
	if err := l.life.Stop(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if errors.Is(l.err, context.Canceled) {
		return nil
	}
	return l.err
}

// Stopped returns a channel closed once Run has returned.
func (l *Loop) Stopped() <-chan struct{} { return l.life.Stopped() }
