// Package shards feeds JetStream consumers' messages to a fixed number of
// goroutines, by run: a message goes to the shard its subject's last token
// (a run id, in weft.events.<p>.<runId> and weft.results.<p>.<runId>)
// hashes to, so one process handles a run's messages one batch at a time,
// in the order JetStream delivers them, while different runs proceed in
// parallel. Each shard hands its handler the messages already waiting, up
// to a batch limit, so one transaction can settle many; with Linger, a
// shard that finds fewer waiting waits a bounded time for more, so a light
// load is settled in batches too.
//
// Shards consume one consumer (New) or a changing set of them (NewShared,
// Add, Remove: an engine's partitions, docs/scaling.md). Each consumer is
// kept through a streams.Keeper: deleted, alone or with its stream, it is
// created again and consumed again (docs/observability.md, "Missing
// consumers").
package shards

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/startstop"
	"github.com/weftrun/weft/pkg/streams"
)

// ErrNotRunning is returned by Add and Remove on shards not started, or
// stopping.
var ErrNotRunning = errors.New("shards: not running")

// Shards are consumers feeding n shards. Their lifecycle is pkg/startstop's:
// Start, then Stop with a drain bounded by Stop's context. Their methods
// are safe for concurrent use.
type Shards struct {
	initial  *streams.Keeper // New's consumer, fed from Start; nil for NewShared
	n        int
	maxBatch int
	linger   time.Duration
	batch    func([]jetstream.Msg)
	shards   []chan delivery
	wg       sync.WaitGroup // the shards' goroutines
	life     startstop.Base

	// consuming counts the feeds whose Consume may still put messages in
	// the shards; the shards close once it is zero.
	consuming sync.WaitGroup

	mu    sync.Mutex
	soft  context.Context  // Start's soft context, while running; nil otherwise
	feeds map[string]*feed // by consumer name
}

// delivery is a message in a shard and the feed it came from.
type delivery struct {
	m jetstream.Msg
	f *feed
}

// New returns shards that, once started, consume keeper's consumer into n
// shards, each calling handle with batches of 1 to maxBatch messages of the
// shards' runs. handle settles the messages; the shards never interrupt it,
// so it must bound its own work.
func New(keeper *streams.Keeper, n, maxBatch int, handle func([]jetstream.Msg), opts ...Option) *Shards {
	l := NewShared(n, maxBatch, handle, opts...)
	l.initial = keeper
	return l
}

// NewShared returns shards with no consumer: once started, Add and Remove
// change the consumers they consume. Otherwise as New.
func NewShared(n, maxBatch int, handle func([]jetstream.Msg), opts ...Option) *Shards {
	l := &Shards{n: n, maxBatch: maxBatch, batch: handle, feeds: map[string]*feed{}}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Option tunes Shards.
type Option func(*Shards)

// Linger makes a shard that has fewer than maxBatch messages waiting wait
// up to d from its batch's first message for more before it calls the
// handler: a batch's first message is handled up to d later, and a light
// load costs fewer, larger batches. Zero or less (the default) hands over
// what is waiting at once. Keep d well under the consumers' AckWait.
func Linger(d time.Duration) Option { return func(l *Shards) { l.linger = d } }

// Start starts the shards and, for shards made by New, the keeper's
// consumer, kept until Stop or ctx's end (see Add).
//
// A creation that fails in a way that may be transient does not fail
// Start (streams.Keeper.Start): the shards start with the consumer missing
// and consume it once the keeper has created it. Start fails when the
// server rejects the consumer's config for good. The end of ctx is a hard
// stop (see Stop); a caller that wants a drain starts the shards with a
// context that outlives its own and calls Stop.
func (l *Shards) Start(ctx context.Context) error {
	return l.life.Start(ctx, l.start)
}

func (l *Shards) start(hard, soft context.Context) (func(), error) {
	l.shards = make([]chan delivery, l.n)
	for i := range l.shards {
		shard := make(chan delivery, l.maxBatch)
		l.shards[i] = shard
		l.wg.Go(func() { l.serve(hard, shard) })
	}
	l.mu.Lock()
	l.soft = soft
	l.mu.Unlock()
	if l.initial != nil {
		if err := l.Add(hard, l.initial); err != nil {
			l.stopFeeds()
			l.closeLanes()
			return nil, err
		}
	}
	return func() {
		<-soft.Done()
		l.stopFeeds()
		l.closeLanes()
	}, nil
}

// Add creates (or updates) keeper's consumer and consumes it into the
// running shards with opts (a priority group, say), until Remove, Stop or
// the end of Start's context. ctx bounds the creation only.
//
// The shards keep the consumer: the errors Consume reports go to
// keeper.Suspect, and whenever the keeper finds the consumer missing and
// creates it again (streams.Keeper.Keep), the shards consume the new one. A
// Consume that ended on its own (nats.go stops it when the consumer is
// deleted) is replaced the same way. A creation that may succeed later
// leaves the consumer to the keeper (streams.Keeper.Start); one the server
// rejects for good fails Add. A consumer already added is left as it is.
func (l *Shards) Add(ctx context.Context, keeper *streams.Keeper, opts ...jetstream.PullConsumeOpt) error {
	l.mu.Lock()
	soft, dup := l.soft, l.feeds[keeper.Name()] != nil
	l.mu.Unlock()
	if soft == nil || soft.Err() != nil {
		return fmt.Errorf("%w: add %s", ErrNotRunning, keeper.Name())
	}
	if dup {
		return nil
	}
	cons, err := keeper.Start(ctx)
	if err != nil {
		return fmt.Errorf("shards: %w", err)
	}
	f := newFeed(l, keeper, opts)
	if cons != nil {
		if err := f.consume(cons); err != nil {
			f.stopConsuming()
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.soft == nil: // Stop began
		f.stopConsuming()
		return fmt.Errorf("%w: add %s", ErrNotRunning, keeper.Name())
	case l.feeds[keeper.Name()] != nil: // a concurrent Add won
		f.stopConsuming()
		return nil
	}
	l.feeds[keeper.Name()] = f
	f.keep(ctx, soft)
	return nil
}

// Remove stops consuming the consumer named name: it stops keeping it,
// drains its Consume (the messages already received go to the shards) and
// waits until the shards have handled every message it delivered, or ctx
// ends (an error wrapping startstop.ErrDrainCutShort; the messages left
// are handled later, or redelivered). Removing a consumer the shards do not
// consume is a no-op.
func (l *Shards) Remove(ctx context.Context, name string) error {
	l.mu.Lock()
	f := l.feeds[name]
	delete(l.feeds, name)
	l.mu.Unlock()
	if f == nil {
		return nil
	}
	return f.stop(ctx)
}

// Consumers returns the names of the consumers the shards consume.
func (l *Shards) Consumers() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := make([]string, 0, len(l.feeds))
	for name := range l.feeds {
		names = append(names, name)
	}
	return names
}

// stopFeeds removes every feed, waiting for each one's Consume to close
// (not for its messages: the shards, draining, handle them).
func (l *Shards) stopFeeds() {
	l.mu.Lock()
	feeds := l.feeds
	l.feeds, l.soft = map[string]*feed{}, nil
	l.mu.Unlock()
	for _, f := range feeds {
		f.stopConsuming()
	}
}

// serve hands the messages of shard to the handler, a batch at a time,
// until the shard is closed. After a hard stop it takes the messages left
// without handling them: JetStream redelivers them.
func (l *Shards) serve(hard context.Context, shard chan delivery) {
	for d := range shard {
		batch := drain(d, shard, l.maxBatch)
		if l.linger > 0 && len(batch) < l.maxBatch {
			batch = gather(hard, batch, shard, l.maxBatch, l.linger)
		}
		if hard.Err() == nil {
			msgs := make([]jetstream.Msg, len(batch))
			for i, d := range batch {
				msgs[i] = d.m
			}
			l.batch(msgs)
		}
		for _, d := range batch {
			d.f.handled.Done()
		}
	}
}

// Stop stops keeping the consumers and delivery, hands the messages the
// shards already hold to the handler, and waits for the batches in flight.
// When ctx ends first, the shards stop taking the messages they hold (not
// acked, JetStream redelivers them), wait for the batches in flight, and
// Stop returns an error wrapping startstop.ErrDrainCutShort. Stop is
// idempotent, and a no-op on shards never started.
func (l *Shards) Stop(ctx context.Context) error {
	if err := l.life.Stop(ctx); err != nil {
		return fmt.Errorf("shards: stop: %w", err)
	}
	return nil
}

// Started returns a channel closed once Start has succeeded.
func (l *Shards) Started() <-chan struct{} { return l.life.Started() }

// Stopped returns a channel closed once started shards have stopped, by
// Stop or by the end of Start's ctx.
func (l *Shards) Stopped() <-chan struct{} { return l.life.Stopped() }

// shard returns the channel of the shard that handles m's run.
func (l *Shards) shard(m jetstream.Msg) chan delivery {
	subject := m.Subject()
	h := fnv.New32a()
	_, _ = h.Write([]byte(subject[strings.LastIndexByte(subject, '.')+1:]))
	return l.shards[h.Sum32()%uint32(len(l.shards))]
}

func (l *Shards) closeLanes() {
	l.consuming.Wait()
	for _, shard := range l.shards {
		close(shard)
	}
	l.wg.Wait()
}

// drain returns first and up to limit-1 more deliveries already waiting in
// shard, without waiting for any.
func drain(first delivery, shard <-chan delivery, limit int) []delivery {
	batch := []delivery{first}
	for len(batch) < limit {
		select {
		case d, ok := <-shard:
			if !ok {
				return batch
			}
			batch = append(batch, d)
		default:
			return batch
		}
	}
	return batch
}

// gather adds to batch the deliveries that reach shard within wait, up
// to limit, and returns early when shard closes or hard ends.
func gather(hard context.Context, batch []delivery, shard <-chan delivery, limit int, wait time.Duration) []delivery {
	t := time.NewTimer(wait)
	defer t.Stop()
	for len(batch) < limit {
		select {
		case d, ok := <-shard:
			if !ok {
				return batch
			}
			batch = append(batch, d)
		case <-t.C:
			return batch
		case <-hard.Done():
			return batch
		}
	}
	return batch
}
