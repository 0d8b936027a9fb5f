// Package lanes feeds a JetStream consumer's messages to a fixed number of
// goroutines, by run: a message goes to the lane its subject's last token
// (a run id, in weft.events.<runId> and weft.results.<runId>) hashes to,
// so one process handles a run's messages one batch at a time, in the order
// JetStream delivers them, while different runs proceed in parallel. Each
// lane hands its handler the messages already waiting, up to a batch limit,
// so one transaction can settle many.
//
// Lanes keep their consumer through a streams.Keeper: a consumer deleted
// under them, alone or with its stream, is created again and consumed
// again (docs/observability.md, "Missing consumers").
package lanes

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/startstop"
	"github.com/weftrun/weft/pkg/streams"
)

// Lanes is a consumer and its lanes. Its lifecycle is pkg/startstop's:
// Start, then Stop with a drain bounded by Stop's context. Its methods are
// safe for concurrent use.
type Lanes struct {
	keeper   *streams.Keeper
	n        int
	maxBatch int
	batch    func([]jetstream.Msg)
	handle   jetstream.MessageHandler
	lanes    []chan jetstream.Msg
	wg       sync.WaitGroup
	keepDone chan struct{}
	life     startstop.Base

	mu sync.Mutex
	cc jetstream.ConsumeContext // nil while no Consume runs
}

// New returns lanes that, once started, consume keeper's consumer into n
// lanes, each calling handle with batches of 1 to maxBatch messages of the
// lanes' runs. handle settles the messages; the lanes never interrupt it,
// so it must bound its own work.
func New(keeper *streams.Keeper, n, maxBatch int, handle func([]jetstream.Msg)) *Lanes {
	return &Lanes{keeper: keeper, n: n, maxBatch: maxBatch, batch: handle}
}

// Start creates (or updates) the keeper's consumer and consumes it into
// the lanes.
//
// It keeps the consumer until Stop or ctx's end: the errors Consume
// reports go to keeper.Suspect, and whenever the keeper finds the consumer
// missing and creates it again (streams.Keeper.Keep), the lanes consume
// the new one. A Consume that ended on its own (nats.go stops it when the
// consumer is deleted) is replaced the same way.
//
// A creation that fails in a way that may be transient does not fail
// Start (streams.Keeper.Start): the lanes start with the consumer missing
// and consume it once the keeper has created it. Start fails when the
// server rejects the consumer's config for good. The end of ctx is a hard
// stop (see Stop); a caller that wants a drain starts the lanes with a
// context that outlives its own and calls Stop.
func (l *Lanes) Start(ctx context.Context) error {
	return l.life.Start(ctx, l.start)
}

func (l *Lanes) start(hard, soft context.Context) (func(), error) {
	cons, err := l.keeper.Start(hard)
	if err != nil {
		return nil, fmt.Errorf("lanes: %w", err)
	}
	l.lanes, l.keepDone = make([]chan jetstream.Msg, l.n), make(chan struct{})
	l.handle = func(m jetstream.Msg) { l.lane(m) <- m }
	for i := range l.lanes {
		lane := make(chan jetstream.Msg, l.maxBatch)
		l.lanes[i] = lane
		l.wg.Go(func() { l.serve(hard, lane) })
	}
	if cons != nil {
		if err := l.consume(cons); err != nil {
			l.closeLanes()
			return nil, err
		}
	}
	go func() {
		defer close(l.keepDone)
		l.keeper.Keep(soft, l.replace)
	}()
	return func() {
		<-soft.Done()
		<-l.keepDone
		l.mu.Lock()
		l.stopConsume()
		l.mu.Unlock()
		l.closeLanes()
	}, nil
}

// serve hands the messages of lane to the handler, a batch at a time,
// until the lane is closed. After a hard stop it takes the messages left
// without handling them: JetStream redelivers them.
func (l *Lanes) serve(hard context.Context, lane chan jetstream.Msg) {
	for m := range lane {
		if hard.Err() == nil {
			l.batch(drain(m, lane, l.maxBatch))
		}
	}
}

// consume starts a Consume of cons into the lanes in place of the
// current one, which it drains: the messages it already received are
// handled, not left to come back after AckWait.
func (l *Lanes) consume(cons jetstream.Consumer) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cc != nil {
		l.cc.Drain()
		<-l.cc.Closed()
		l.cc = nil
	}
	cc, err := cons.Consume(l.handle, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		l.keeper.Suspect(err)
	}))
	if err != nil {
		return fmt.Errorf("lanes: consume %s: %w", l.keeper.Name(), err)
	}
	l.cc = cc
	return nil
}

// replace consumes cons, the consumer the keeper created again. When that
// fails (the consumer deleted again at once), the keeper is asked to check
// it again.
func (l *Lanes) replace(cons jetstream.Consumer) {
	if err := l.consume(cons); err != nil {
		l.keeper.Suspect(err)
	}
}

// stopConsume stops the current Consume, if any, and waits for it to
// close. l.mu must be held.
func (l *Lanes) stopConsume() {
	if l.cc == nil {
		return
	}
	l.cc.Stop()
	<-l.cc.Closed()
	l.cc = nil
}

// Stop stops keeping the consumer and delivery, hands the messages the
// lanes already hold to the handler, and waits for the batches in flight.
// When ctx ends first, the lanes stop taking the messages they hold (not
// acked, JetStream redelivers them), wait for the batches in flight, and
// Stop returns an error wrapping startstop.ErrDrainCutShort. Stop is
// idempotent, and a no-op on lanes never started.
func (l *Lanes) Stop(ctx context.Context) error {
	if err := l.life.Stop(ctx); err != nil {
		return fmt.Errorf("lanes: stop %s: %w", l.keeper.Name(), err)
	}
	return nil
}

// Started returns a channel closed once Start has succeeded.
func (l *Lanes) Started() <-chan struct{} { return l.life.Started() }

// Stopped returns a channel closed once started lanes have stopped, by
// Stop or by the end of Start's ctx.
func (l *Lanes) Stopped() <-chan struct{} { return l.life.Stopped() }

// lane returns the channel of the lane that handles m's run.
func (l *Lanes) lane(m jetstream.Msg) chan jetstream.Msg {
	subject := m.Subject()
	h := fnv.New32a()
	_, _ = h.Write([]byte(subject[strings.LastIndexByte(subject, '.')+1:]))
	return l.lanes[h.Sum32()%uint32(len(l.lanes))]
}

func (l *Lanes) closeLanes() {
	for _, lane := range l.lanes {
		close(lane)
	}
	l.wg.Wait()
}

// drain returns first and up to limit-1 more messages already waiting in
// lane, without waiting for any.
func drain(first jetstream.Msg, lane <-chan jetstream.Msg, limit int) []jetstream.Msg {
	batch := []jetstream.Msg{first}
	for len(batch) < limit {
		select {
		case m, ok := <-lane:
			if !ok {
				return batch
			}
			batch = append(batch, m)
		default:
			return batch
		}
	}
	return batch
}
