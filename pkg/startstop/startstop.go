package startstop

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrAlreadyStarted is returned by Start on a component whose Start
// succeeded before.
var ErrAlreadyStarted = errors.New("component already started")

// ErrDrainCutShort is wrapped, with the context's error, by Stop's error
// when its context ended before the drain did.
var ErrDrainCutShort = errors.New("drain cut short")

// StartFunc sets a component up and returns its run loop, or an error
// when the component cannot start (Start then returns it, and ends hard
// and soft). hard ends when the component must stop at once: Start's
// context ended, or Stop's drain was cut short. soft ends with hard, and
// when Stop asks for a drain. run is called once, in its own goroutine;
// when it returns the component has stopped.
type StartFunc func(hard, soft context.Context) (run func(), err error)

// Base implements Start, Stop, Started and Stopped for a component that
// embeds it (the package doc gives the contract).
type Base struct {
	init             sync.Once
	started, stopped chan struct{}

	// startMu serialises Start, and Stop with a Start in progress.
	startMu sync.Mutex
	mu      sync.Mutex
	soft    context.CancelFunc // set once run is launched
	hard    context.CancelFunc
}

func (b *Base) channels() {
	b.init.Do(func() {
		b.started, b.stopped = make(chan struct{}), make(chan struct{})
	})
}

// Start runs start with contexts derived from ctx and, when it succeeds,
// launches the run loop it returned and closes Started. It returns
// start's error, or ErrAlreadyStarted after a Start that succeeded.
func (b *Base) Start(ctx context.Context, start StartFunc) error {
	b.channels()
	b.startMu.Lock()
	defer b.startMu.Unlock()
	if b.launched() {
		return ErrAlreadyStarted
	}
	hardCtx, hard := context.WithCancel(ctx)
	softCtx, soft := context.WithCancel(hardCtx)
	run, err := start(hardCtx, softCtx)
	if err != nil {
		soft()
		hard()
		return err
	}
	b.mu.Lock()
	b.soft, b.hard = soft, hard
	b.mu.Unlock()
	close(b.started)
	go func() {
		defer close(b.stopped)
		defer hard()
		run()
	}()
	return nil
}

func (b *Base) launched() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hard != nil
}

// Stop asks the run loop to drain (ends soft) and waits for it to return.
// When ctx ends first, it ends hard, waits for the loop, and returns an
// error wrapping ErrDrainCutShort and ctx.Err(). It returns nil at once
// for a component never started, and is idempotent.
func (b *Base) Stop(ctx context.Context) error {
	b.startMu.Lock() // wait for a Start in progress
	b.mu.Lock()
	soft, hard := b.soft, b.hard
	b.mu.Unlock()
	b.startMu.Unlock()
	if hard == nil {
		return nil
	}
	soft()
	select {
	case <-b.stopped:
		return nil
	case <-ctx.Done():
	}
	select {
	case <-b.stopped:
		return nil // the drain ended as ctx did
	default:
	}
	hard()
	<-b.stopped
	return fmt.Errorf("%w: %w", ErrDrainCutShort, ctx.Err())
}

// Started returns a channel closed once a Start has succeeded.
func (b *Base) Started() <-chan struct{} {
	b.channels()
	return b.started
}

// Stopped returns a channel closed once the run loop a successful Start
// launched has returned.
func (b *Base) Stopped() <-chan struct{} {
	b.channels()
	return b.stopped
}
