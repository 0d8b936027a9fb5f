package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/streams"
)

// fetchWait is how long one pull request waits for tasks. Stop cancels it
// early; the server drops a request whose client went away, so no task is
// delivered to a pull nobody reads.
const fetchWait = 30 * time.Second

// Backoff after a failed pull request (the server unreachable, the consumer
// gone): doubling from minPullBackoff up to maxPullBackoff.
const (
	minPullBackoff = 100 * time.Millisecond
	maxPullBackoff = 5 * time.Second
)

// pull takes tasks while soft lasts and runs each on its own goroutine in
// tasks. It asks JetStream only for as many tasks as it has free slots, so
// at most Config.Concurrency tasks are delivered to this worker and not yet
// settled, and none waits here while it could run elsewhere.
//
// It keeps the consumer meanwhile (keeper.Keep): a failed pull request
// asks the keeper to check it now. cons addresses the consumer by name, so
// it pulls from the consumer the keeper creates again. A nil cons (its
// creation at start failed) is the first one the keeper creates.
func (w *Worker) pull(ctx, soft context.Context, keeper *streams.Keeper, cons jetstream.Consumer, tasks *sync.WaitGroup, beat time.Duration) {
	var keeping sync.WaitGroup
	defer keeping.Wait()
	created := w.keep(soft, keeper, &keeping)
	if cons == nil {
		select {
		case cons = <-created:
		case <-soft.Done():
			return
		}
	}
	slots := make(semaphore, w.cfg.Concurrency)
	backoff := minPullBackoff
	for {
		n := slots.acquire(soft)
		if n == 0 {
			return
		}
		handed, err := w.fetch(ctx, soft, cons, n, func(msg jetstream.Msg) {
			tasks.Go(func() {
				defer slots.release(1)
				w.handle(ctx, msg, beat)
			})
		})
		slots.release(n - handed)
		if err == nil {
			backoff = minPullBackoff
			continue
		}
		keeper.Suspect(err)
		w.epoch.distrust(time.Now())
		w.logger.WarnContext(ctx, "worker: pull request failed; retrying", "err", err, "backoff", backoff.String())
		if !wait(soft, backoff) {
			return
		}
		backoff = min(2*backoff, maxPullBackoff)
	}
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

// fetch sends one pull request for up to n tasks and hands each delivered
// task to run, except those delivered once soft has ended, which it gives
// back at once. It returns how many tasks it handed to run (each holds a
// slot until run's goroutine ends), and the request's error unless the
// request merely expired or was cancelled by Stop.
func (w *Worker) fetch(ctx, soft context.Context, cons jetstream.Consumer, n int, run func(jetstream.Msg)) (int, error) {
	fctx, cancel := context.WithTimeout(soft, fetchWait)
	defer cancel()
	batch, err := cons.Fetch(n, jetstream.FetchContext(fctx))
	if err != nil {
		return 0, err
	}
	handed := 0
	for msg := range batch.Messages() {
		if soft.Err() != nil {
			w.giveBack(ctx, msg)
			continue
		}
		run(msg)
		handed++
	}
	if err := batch.Error(); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return handed, err
	}
	return handed, nil
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

// acquire waits for at least one free slot and takes every free slot,
// returning how many it took, or 0 once ctx ends.
func (s semaphore) acquire(ctx context.Context) int {
	select {
	case s <- struct{}{}:
	case <-ctx.Done():
		return 0
	}
	n := 1
	for n < cap(s) {
		select {
		case s <- struct{}{}:
			n++
		default:
			return n
		}
	}
	return n
}

// release frees n slots.
func (s semaphore) release(n int) {
	for range n {
		<-s
	}
}

// wait sleeps for d, or less when ctx ends; it reports whether ctx lasted.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
