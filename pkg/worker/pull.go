package worker

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/periodic"
	"github.com/weftrun/weft/pkg/streams"
)

// Backoff after a failed pull request (the server unreachable, the consumer
// gone): doubling from minPullBackoff up to maxPullBackoff.
const (
	minPullBackoff = 100 * time.Millisecond
	maxPullBackoff = 5 * time.Second
)

// pull takes tasks while soft lasts (and its connection: pullFailed) and
// runs each on its own goroutine in tasks, fairly across the queue's lanes
// (lanes.go): for each free slot it pulls one task from the next lane, in
// round-robin order, that has one,
// so one tenant's backlog delays another tenant's task by at most one
// task per slot. It pulls only when it holds a free slot, so at most
// Config.Concurrency tasks are delivered to this worker and not yet
// settled, and none waits here while it could run elsewhere. With no task
// anywhere it waits for news of one: a publish seen on the bus, or its
// poll of the stream every Config.LanePollInterval.
//
// It keeps the queue's own consumer meanwhile (keeper.Keep): a failed pull
// from it asks the keeper to check it now. cons addresses the consumer by
// name, so it pulls from the consumer the keeper creates again. A nil
// cons (its creation at start failed) is the first one the keeper creates.
// A tenant lane whose consumer is gone is created again.
func (w *Worker) pull(ctx, soft context.Context, keeper *streams.Keeper, cons jetstream.Consumer, tasks *sync.WaitGroup, beat time.Duration) {
	soft, done := context.WithCancel(soft) // pulling ends, by soft or by itself: so does keeping
	var keeping sync.WaitGroup
	defer keeping.Wait()
	defer done()
	created := w.keep(soft, keeper, &keeping)
	if cons == nil {
		select {
		case cons = <-created:
		case <-soft.Done():
			return
		}
	}
	ls, err := newLanes(w, cons)
	if err != nil {
		w.logger.ErrorContext(ctx, "worker: cannot take tasks", "err", err)
		return
	}
	subs, err := ls.watch()
	if err != nil {
		w.logger.WarnContext(ctx, "worker: not watching the queue; new tasks wait for the next poll", "err", err)
	}
	defer unsubscribe(subs)
	defer ls.close(ctx)
	ls.poll(soft)
	slots := make(semaphore, w.cfg.Concurrency)
	for ls.acquire(soft, slots) {
		msg, ok := w.next(soft, ls, keeper)
		if !ok {
			return
		}
		if soft.Err() != nil {
			w.giveBack(ctx, msg)
			return
		}
		tasks.Go(func() {
			defer slots.release(1)
			w.handle(ctx, msg, beat)
		})
	}
}

// next returns the next task for the slot the caller holds, waiting for
// one as long as soft lasts; ok is false once soft has ended.
func (w *Worker) next(soft context.Context, ls *lanes, keeper *streams.Keeper) (jetstream.Msg, bool) {
	poll := time.NewTicker(w.cfg.LanePollInterval)
	defer poll.Stop()
	backoff := minPullBackoff
	for soft.Err() == nil {
		ls.absorb(soft)
		msg, l, err := ls.take()
		if msg != nil {
			return msg, true
		}
		if err != nil {
			if !w.pullFailed(soft, ls, l, keeper, err, backoff) {
				return nil, false
			}
			backoff = min(2*backoff, maxPullBackoff)
			continue
		}
		backoff = minPullBackoff
		select {
		case <-soft.Done():
			return nil, false
		case <-ls.wake:
		case <-poll.C:
			ls.poll(soft)
		}
	}
	return nil, false
}

// pullFailed handles a failed pull from l. On a connection closed for good
// it stops the worker (Err). Otherwise it makes the epoch distrusted;
// a tenant lane whose consumer is gone is dropped and hinted, so that it
// is created again; another failure of a tenant lane is retried; one of
// the queue's own consumer asks the keeper to check it. Then it waits
// backoff. It reports whether soft lasted.
func (w *Worker) pullFailed(soft context.Context, ls *lanes, l *lane, keeper *streams.Keeper, err error, backoff time.Duration) bool {
	if soft.Err() != nil {
		return false
	}
	if nc := w.js.Conn(); nc != nil && nc.IsClosed() {
		w.lost.Store(true)
		w.logger.ErrorContext(soft, "worker: the NATS connection is closed for good; the worker stops taking tasks", "err", err)
		return false
	}
	w.epoch.distrust(time.Now())
	if l.token != "" && gone(err) {
		w.logger.InfoContext(soft, "worker: a tenant lane's consumer is gone; creating it again", "lane", l.token, "err", err)
		ls.drop(soft, l)
		ls.hint(ls.queue+"."+l.token, false)
		return periodic.Sleep(soft, backoff) == nil
	}
	if l.token == "" {
		keeper.Suspect(err)
	}
	w.logger.WarnContext(soft, "worker: pull request failed; retrying", "lane", l.token, "err", err, "backoff", backoff.String())
	return periodic.Sleep(soft, backoff) == nil
}

// keep runs keeper.Keep in keeping until soft ends. Each consumer the
// keeper creates again makes the epoch distrusted; the first is also sent
// on the returned channel, for a pull that has no consumer yet.
func (w *Worker) keep(soft context.Context, keeper *streams.Keeper, keeping *sync.WaitGroup) <-chan jetstream.Consumer {
	created := make(chan jetstream.Consumer, 1)
	keeping.Go(func() {
		keeper.Keep(soft, func(c jetstream.Consumer) {
			w.epoch.distrust(time.Now())
			select {
			case created <- c:
			default:
			}
		})
	})
	return created
}

// giveBack naks a task this worker will not run, so JetStream hands it to
// another worker now rather than after AckWait.
func (w *Worker) giveBack(ctx context.Context, msg jetstream.Msg) {
	if err := msg.Nak(); err != nil {
		w.logger.WarnContext(ctx, "worker: nak of an abandoned task failed; it is redelivered after AckWait", "err", err)
	}
}

// semaphore counts the busy task slots: one token per slot in use.
type semaphore chan struct{}

// release frees n slots.
func (s semaphore) release(n int) {
	for range n {
		<-s
	}
}
