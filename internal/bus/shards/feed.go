package shards

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/startstop"
	"github.com/weftrun/weft/pkg/streams"
)

// feed is one consumer of the shards: its keeper, its current Consume and
// the count of the messages it delivered that the shards have not handled.
type feed struct {
	l      *Shards
	keeper *streams.Keeper
	opts   []jetstream.PullConsumeOpt
	handle jetstream.MessageHandler

	handled  sync.WaitGroup // one per message in a shard
	cancel   context.CancelFunc
	keepDone chan struct{}
	stopOnce sync.Once

	mu sync.Mutex
	cc jetstream.ConsumeContext // nil while no Consume runs
}

func newFeed(l *Shards, keeper *streams.Keeper, opts []jetstream.PullConsumeOpt) *feed {
	f := &feed{l: l, keeper: keeper, opts: opts, keepDone: make(chan struct{})}
	f.handle = func(m jetstream.Msg) {
		f.handled.Add(1)
		l.shard(m) <- delivery{m: m, f: f}
	}
	l.consuming.Add(1)
	return f
}

// keep runs the keeper's loop, with ctx's values, until the shards' soft
// context ends or the feed stops: the loop outlives the call that added
// the feed.
func (f *feed) keep(ctx, soft context.Context) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stopAfter := context.AfterFunc(soft, cancel)
	f.cancel = func() { stopAfter(); cancel() }
	go func() {
		defer close(f.keepDone)
		f.keeper.Keep(ctx, f.replace)
	}()
}

// consume starts a Consume of cons in place of the current one, which it
// drains: the messages it already received are handled, not left to come
// back after AckWait.
func (f *feed) consume(cons jetstream.Consumer) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.endConsume(true)
	opts := append([]jetstream.PullConsumeOpt{jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		f.keeper.Suspect(err)
	})}, f.opts...)
	cc, err := cons.Consume(f.handle, opts...)
	if err != nil {
		return fmt.Errorf("shards: consume %s: %w", f.keeper.Name(), err)
	}
	f.cc = cc
	return nil
}

// replace consumes cons, the consumer the keeper created again. When that
// fails (the consumer deleted again at once), the keeper is asked to check
// it again.
func (f *feed) replace(cons jetstream.Consumer) {
	if err := f.consume(cons); err != nil {
		f.keeper.Suspect(err)
	}
}

// endConsume ends the current Consume, if any, draining it or not, and
// waits for it to close. f.mu must be held.
func (f *feed) endConsume(drain bool) {
	if f.cc == nil {
		return
	}
	if drain {
		f.cc.Drain()
	} else {
		f.cc.Stop()
	}
	<-f.cc.Closed()
	f.cc = nil
}

// stopConsuming stops the keeper's loop and the Consume, waiting for both
// to end. It is idempotent.
func (f *feed) stopConsuming() {
	f.stopOnce.Do(func() {
		if f.cancel != nil {
			f.cancel()
			<-f.keepDone
		}
		f.mu.Lock()
		f.endConsume(true)
		f.mu.Unlock()
		f.l.consuming.Done()
	})
}

// stop stops consuming and waits until the shards have handled every
// message the feed delivered, or ctx ends.
func (f *feed) stop(ctx context.Context) error {
	f.stopConsuming()
	done := make(chan struct{})
	go func() {
		f.handled.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shards: remove %s: %w", f.keeper.Name(), startstop.ErrDrainCutShort)
	}
}
