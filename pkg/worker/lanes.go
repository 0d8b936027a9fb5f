package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/streams"
)

// lane is one consumer the worker takes tasks from: the queue's own, of
// the tasks of no tenant (token ""), or a tenant's lane.
type lane struct {
	token string
	cons  jetstream.Consumer
	// ready is set when the lane may hold a task no worker holds (a task
	// published on it, or the stream counting tasks on it) and cleared
	// when a pull from it finds none.
	ready bool
	// published is set when the worker saw a task published on the lane
	// and has not pulled from it since: the publish may reach the worker
	// before the stream has stored the task, so the next pull waits a
	// moment for it (publishSettle).
	published bool
}

// publishSettle bounds the wait of a pull from a lane the worker saw a
// task published on, for the stream to store it. A stream stores a task
// within microseconds of its publish; a worker that finds nothing then
// (another worker took the task) has lost no more than this.
const publishSettle = 20 * time.Millisecond

// laneRetryMin and laneRetryMax bound how long the worker leaves a lane
// whose consumer it could not create (its NATS user not allowed to, the
// server failing) before it tries again, so that one such lane does not
// hold up the others at every poll: the wait doubles from the first to the
// second with each failure in a row. A creation that failed while the bus
// elected a leader is tried again a second later, not after a flat 30 s,
// which in the cluster soak held a lane's tasks long enough for the
// engine's sweep to send them again (duplicate executions).
const (
	laneRetryMin = time.Second
	laneRetryMax = 30 * time.Second
)

// lanes is the fair scheduler's view of the queue: its lanes in a fixed
// round-robin order, the queue's own first, and the tokens of lanes that
// news of a task (a publish seen on the bus, a poll of the stream) has
// marked ready since the scheduler last looked. Only the scheduler's
// goroutine uses list and last; hints is shared with the NATS callback.
type lanes struct {
	w      *Worker
	queue  string // weft.tasks.<queue>
	filter string // weft.tasks.<queue>.*
	name   string // the queue's lanes stream, streams.TaskLanesStream
	list   []*lane
	last   *lane                    // the lane of the last task taken
	stream jetstream.Stream         // the lanes stream, once poll found it
	failed map[string]time.Time     // lane token: when to try creating it again
	wait   map[string]time.Duration // lane token: the last wait after a failed creation

	mu    sync.Mutex
	hints map[string]bool // lane token: seen published (else polled)
	wake  chan struct{}
}

// newLanes returns the lanes of the worker's queue, with the queue's own
// consumer as the only lane so far, marked ready.
func newLanes(w *Worker, own jetstream.Consumer) (*lanes, error) {
	queue, err := streams.TaskSubject(w.cfg.Queue)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	return &lanes{w: w, queue: queue, filter: queue + ".*", name: streams.TaskLanesStream(w.cfg.Queue),
		list:   []*lane{{cons: own, ready: true}},
		failed: make(map[string]time.Time),
		wait:   make(map[string]time.Duration),
		hints:  make(map[string]bool),
		wake:   make(chan struct{}, 1),
	}, nil
}

// watch subscribes to the queue's subjects on core NATS: each task the
// engine publishes reaches the worker too, and marks its lane ready, so an
// idle worker takes it at once instead of at its next poll. The caller
// unsubscribes. A worker not allowed to subscribe still takes every task,
// at its next poll (Config.LanePollInterval).
func (ls *lanes) watch() ([]*nats.Subscription, error) {
	nc := ls.w.js.Conn()
	if nc == nil {
		return nil, nil
	}
	var subs []*nats.Subscription
	for _, subject := range []string{ls.queue, ls.filter} {
		sub, err := nc.Subscribe(subject, func(m *nats.Msg) { ls.hint(m.Subject, true) })
		if err != nil {
			unsubscribe(subs)
			return nil, fmt.Errorf("worker: watch %s: %w", subject, err)
		}
		subs = append(subs, sub)
	}
	return subs, nil
}

func unsubscribe(subs []*nats.Subscription) {
	for _, s := range subs {
		_ = s.Unsubscribe()
	}
}

// hint marks the lane of subject ready, and published when a task was
// seen published on it, and wakes the scheduler. It never blocks.
func (ls *lanes) hint(subject string, published bool) {
	token := ""
	if subject != ls.queue {
		token = strings.TrimPrefix(subject, ls.queue+".")
	}
	ls.mu.Lock()
	ls.hints[token] = ls.hints[token] || published
	ls.mu.Unlock()
	select {
	case ls.wake <- struct{}{}:
	default:
	}
}

// absorb marks ready every lane hinted since the last call, creating the
// lane consumers of tenants the worker has not seen (or whose consumer
// went away).
func (ls *lanes) absorb(ctx context.Context) {
	ls.mu.Lock()
	hints := ls.hints
	ls.hints = make(map[string]bool)
	ls.mu.Unlock()
	for token, published := range hints {
		if l := ls.lane(ctx, token); l != nil {
			l.ready = true
			l.published = l.published || published
		}
	}
}

// lane returns the lane of token, creating its consumer when the worker
// has none; nil when the token is not a lane token or the creation fails
// (tried again laneRetryMin to laneRetryMax later), each creation bounded by
// Config.PublishTimeout.
func (ls *lanes) lane(ctx context.Context, token string) *lane {
	for _, l := range ls.list {
		if l.token == token {
			return l
		}
	}
	if time.Now().Before(ls.failed[token]) {
		return nil
	}
	cons, err := ls.ensure(ctx, token)
	if err != nil {
		wait := min(max(2*ls.wait[token], laneRetryMin), laneRetryMax)
		ls.wait[token], ls.failed[token] = wait, time.Now().Add(wait)
		ls.w.logger.WarnContext(ctx, "worker: cannot create a tenant lane's consumer; its tasks wait",
			"lane", token, "err", err, "retry_after", wait.String())
		return nil
	}
	delete(ls.failed, token)
	delete(ls.wait, token)
	l := &lane{token: token, cons: cons}
	ls.list = append(ls.list, l)
	ls.w.metrics.lanesChanged(ctx, 1)
	return l
}

// ensure creates or updates the consumer of the lane token. A consumer
// that did not exist makes the delivery epoch distrusted: the tasks on the
// lane may have been delivered before, through a lane deleted since.
func (ls *lanes) ensure(ctx context.Context, token string) (jetstream.Consumer, error) {
	ctx, cancel := context.WithTimeout(ctx, ls.w.cfg.PublishTimeout)
	defer cancel()
	cc, err := streams.TaskLaneConsumer(ls.w.cfg.Queue, token, ls.w.cfg.AckWait, ls.w.cfg.LaneInactiveThreshold)
	if err != nil {
		return nil, err
	}
	if _, err := ls.w.js.Consumer(ctx, ls.name, cc.Durable); errors.Is(err, jetstream.ErrConsumerNotFound) {
		ls.w.epoch.distrust(time.Now())
	}
	cons, err := ls.w.js.CreateOrUpdateConsumer(ctx, ls.name, cc)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", cc.Durable, err)
	}
	return cons, nil
}

// poll asks the stream which lanes hold tasks and hints each, and the
// queue's own consumer: it finds the tenants whose tasks were published
// while the worker was not watching, and tasks made available again
// without a publish (given back, or their AckWait passed).
func (ls *lanes) poll(ctx context.Context) {
	ls.hint(ls.queue, false)
	if ls.stream == nil {
		stream, err := ls.w.js.Stream(ctx, ls.name) // made by the engine with the queue's first tenant task
		if err != nil {
			ls.w.logger.DebugContext(ctx, "worker: lanes poll failed", "err", err)
			return
		}
		ls.stream = stream // addresses the stream by name: valid once it is created again
	}
	info, err := ls.stream.Info(ctx, jetstream.WithSubjectFilter(ls.filter))
	if err != nil {
		ls.w.logger.DebugContext(ctx, "worker: lanes poll failed", "err", err)
		return
	}
	for subject, n := range info.State.Subjects {
		if n > 0 {
			ls.hint(subject, false)
		}
	}
}

// drop removes the lane of a tenant whose consumer is gone; a later hint
// or poll creates it again.
func (ls *lanes) drop(ctx context.Context, l *lane) {
	for i, x := range ls.list {
		if x == l {
			ls.list = append(ls.list[:i], ls.list[i+1:]...)
			ls.w.metrics.lanesChanged(ctx, -1)
			return
		}
	}
}

// close counts the worker's tenant lanes as no longer held, when it stops
// pulling; their consumers stay on the server until inactive.
func (ls *lanes) close(ctx context.Context) {
	ls.w.metrics.lanesChanged(ctx, 1-len(ls.list))
}

// acquire waits for a free slot of slots and takes it, reporting false,
// taking none, once ctx ends. Meanwhile it absorbs the news of tasks, so
// that the lane of a tenant first seen while every slot is busy is
// created then, and ready when a slot frees.
func (ls *lanes) acquire(ctx context.Context, slots semaphore) bool {
	for {
		select {
		case slots <- struct{}{}:
			return true
		case <-ls.wake:
			ls.absorb(ctx)
		case <-ctx.Done():
			return false
		}
	}
}

// take pulls one task from the first ready lane after the lane of the
// last task taken, in round-robin order, so that while k lanes have work
// each gets every k-th free slot, a lane added since included. It returns
// a nil msg when no ready lane has a task, and the lane of a failed pull
// with its error.
func (ls *lanes) take() (jetstream.Msg, *lane, error) {
	n := len(ls.list)
	start := 0
	for i, l := range ls.list {
		if l == ls.last {
			start = i + 1
		}
	}
	for i := range n {
		l := ls.list[(start+i)%n]
		if !l.ready {
			continue
		}
		msg, err := fetchOne(l.cons, l.published)
		l.published = false
		if err != nil {
			return nil, l, err
		}
		if msg == nil {
			l.ready = false
			continue
		}
		ls.last = l
		return msg, l, nil
	}
	return nil, nil, nil
}

// fetchOne pulls at most one task, without waiting for one, or for up to
// publishSettle when settle is set.
func fetchOne(cons jetstream.Consumer, settle bool) (jetstream.Msg, error) {
	var batch jetstream.MessageBatch
	var err error
	if settle {
		batch, err = cons.Fetch(1, jetstream.FetchMaxWait(publishSettle))
	} else {
		batch, err = cons.FetchNoWait(1)
	}
	if err != nil {
		return nil, err
	}
	var msg jetstream.Msg
	for m := range batch.Messages() {
		msg = m
	}
	if err := batch.Error(); err != nil {
		return msg, err
	}
	return msg, nil
}

// gone reports whether err says a lane's consumer no longer exists.
func gone(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerDeleted) ||
		errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, nats.ErrNoResponders)
}
