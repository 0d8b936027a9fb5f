// Package lanes feeds a JetStream consumer's messages to a fixed number of
// goroutines, by run: a message goes to the lane its subject's last token
// (a run id, in weft.events.<runId> and weft.results.<runId>) hashes to,
// so one process handles a run's messages one batch at a time, in the order
// JetStream delivers them, while different runs proceed in parallel. Each
// lane hands its handler the messages already waiting, up to a batch limit,
// so one transaction can settle many.
package lanes

import (
	"fmt"
	"hash/fnv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Lanes is a running consumer and its lanes.
type Lanes struct {
	cc    jetstream.ConsumeContext
	lanes []chan jetstream.Msg
	wg    sync.WaitGroup
}

// Start consumes cons into n lanes, each calling handle with batches of 1
// to maxBatch messages of the lanes' runs. handle settles the messages.
func Start(cons jetstream.Consumer, n, maxBatch int, handle func([]jetstream.Msg)) (*Lanes, error) {
	l := &Lanes{lanes: make([]chan jetstream.Msg, n)}
	for i := range l.lanes {
		lane := make(chan jetstream.Msg, maxBatch)
		l.lanes[i] = lane
		l.wg.Go(func() {
			for m := range lane {
				handle(drain(m, lane, maxBatch))
			}
		})
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { l.lane(m) <- m })
	if err != nil {
		l.closeLanes()
		return nil, fmt.Errorf("lanes: consume: %w", err)
	}
	l.cc = cc
	return l, nil
}

// Stop stops delivery and waits for the batches in flight. Messages
// fetched but not handled are not acked; JetStream redelivers them.
func (l *Lanes) Stop() {
	l.cc.Stop()
	<-l.cc.Closed()
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
