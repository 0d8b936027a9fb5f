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

	"github.com/weftrun/weft/pkg/streams"
)

// Lanes is a running consumer and its lanes.
type Lanes struct {
	keeper   *streams.Keeper
	handle   jetstream.MessageHandler
	lanes    []chan jetstream.Msg
	wg       sync.WaitGroup
	stopKeep context.CancelFunc
	keepDone chan struct{}

	mu sync.Mutex
	cc jetstream.ConsumeContext // nil while no Consume runs
}

// Start creates (or updates) keeper's consumer and consumes it into n
// lanes, each calling handle with batches of 1 to maxBatch messages of the
// lanes' runs. handle settles the messages.
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
// server rejects the consumer's config for good.
func Start(ctx context.Context, keeper *streams.Keeper, n, maxBatch int, handle func([]jetstream.Msg)) (*Lanes, error) {
	cons, err := keeper.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("lanes: %w", err)
	}
	l := &Lanes{keeper: keeper, lanes: make([]chan jetstream.Msg, n), keepDone: make(chan struct{})}
	l.handle = func(m jetstream.Msg) { l.lane(m) <- m }
	for i := range l.lanes {
		lane := make(chan jetstream.Msg, maxBatch)
		l.lanes[i] = lane
		l.wg.Go(func() {
			for m := range lane {
				handle(drain(m, lane, maxBatch))
			}
		})
	}
	if cons != nil {
		if err := l.consume(cons); err != nil {
			l.closeLanes()
			return nil, err
		}
	}
	keepCtx, stopKeep := context.WithCancel(ctx)
	l.stopKeep = stopKeep
	go func() {
		defer close(l.keepDone)
		keeper.Keep(keepCtx, l.replace)
	}()
	return l, nil
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

// Stop stops keeping the consumer and delivery, and waits for the batches
// in flight. Messages fetched but not handled are not acked; JetStream
// redelivers them.
func (l *Lanes) Stop() {
	l.stopKeep()
	<-l.keepDone
	l.mu.Lock()
	l.stopConsume()
	l.mu.Unlock()
	l.closeLanes()
}

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
