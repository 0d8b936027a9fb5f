package projector

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/internal/store/pipetx"
	"github.com/weftrun/weft/pkg/periodic"
)

// Cross-process wakeups. The runs that committed batches changed are sent
// as pg_notify(runChangedChannel, "<origin> <runId>,<runId>…") by one
// goroutine per projector (sendLoop), after the batches' commits, in a
// transaction of its own with synchronous_commit off. Not in the batch's
// transaction: a NOTIFY holds a cluster-wide lock from its commit through
// the commit's WAL flush, so notifying commits go one at a time
// (docs/outbox.md, "Waking the relay", measured it halving commits/s); a
// wake-up needs no flush, so the lock is held for microseconds. Not by
// the lane either: it goes on to its next batch, and under load one
// notification covers the runs of many batches. A crash between a commit
// and its notification loses the wake-up: the waiters of other projectors
// see the change at their WaitRecheck.
//
// Each projector LISTENs on one connection of its own to the primary (not
// the pool's; never the ReadPool's: a standby cannot LISTEN) and wakes the
// long polls of the runs named, except in its own notifications:
// afterCommit has woken those already (with a ReadPool, through the replay
// fence, fence.go). Every time the LISTEN is
// (re)established every waiter is woken to recheck once, so a commit made
// while no LISTEN was in place is not missed; the WaitRecheck of each long
// poll is only the safety net for a lost notification, or a connection
// that died silently until the next ping notices.

const (
	// runChangedChannel is the Postgres channel of snapshot commits.
	runChangedChannel = "weft_run_changed"
	// notifyRunsMax bounds the run ids of one notification: 150 ids of 36
	// characters and the origin stay under Postgres's 8000-byte payload.
	notifyRunsMax = 150
	// listenPing is how long the LISTEN connection may stay silent before
	// it is pinged: a connection that died without a word is found then.
	listenPing = 15 * time.Second
	// listenAppName is the LISTEN connection's application_name.
	listenAppName = "weft-projector-listen"
)

// queueNotify queues the notifications of the changed runs in b, in
// chunks of notifyRunsMax ids.
func queueNotify(b *pgx.Batch, origin string, changed []string) {
	for chunk := range sliceChunks(changed, notifyRunsMax) {
		b.Queue("SELECT pg_notify($1, $2)", runChangedChannel, origin+" "+strings.Join(chunk, ","))
	}
}

// wakeQueue holds the runs changed by committed batches until sendLoop
// notifies them. Safe for concurrent use.
type wakeQueue struct {
	mu      sync.Mutex
	pending map[string]struct{}
	kick    chan struct{} // capacity 1: a send is due
}

func newWakeQueue() *wakeQueue {
	return &wakeQueue{pending: map[string]struct{}{}, kick: make(chan struct{}, 1)}
}

// add queues runIDs and kicks the sender.
func (q *wakeQueue) add(runIDs []string) {
	if len(runIDs) == 0 {
		return
	}
	q.mu.Lock()
	for _, id := range runIDs {
		q.pending[id] = struct{}{}
	}
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// take returns and forgets the queued runs, sorted.
func (q *wakeQueue) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	ids := slices.Sorted(maps.Keys(q.pending))
	clear(q.pending)
	return ids
}

// notifyChanged tells the other projectors that the runs changed: through
// sendLoop when it runs (a Service's Serve), else at once (a Rebuilder).
func (s *Service) notifyChanged(ctx context.Context, runIDs []string) {
	if s.wakes != nil {
		s.wakes.add(runIDs)
		return
	}
	s.sendNotify(ctx, runIDs)
}

// sendLoop notifies the queued runs, one transaction at a time, until ctx
// ends.
func (s *Service) sendLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wakes.kick:
		}
		s.sendNotify(ctx, s.wakes.take())
	}
}

// sendNotify sends the runs' notifications; a failure is logged, and the
// long polls of other projectors see the change at their WaitRecheck.
func (s *Service) sendNotify(ctx context.Context, runIDs []string) {
	if len(runIDs) == 0 {
		return
	}
	b := &pgx.Batch{}
	queueNotify(b, s.origin, runIDs)
	err := pipetx.BeginFunc(ctx, s.pool, []string{"SET LOCAL synchronous_commit = off"}, func(tx *pipetx.Tx) error {
		return tx.CommitBatch(ctx, b)
	})
	if err != nil && ctx.Err() == nil {
		s.logger.WarnContext(ctx, "projector: changed runs not notified to other projectors", "runs", len(runIDs), "err", err)
	}
}

// sliceChunks yields s in chunks of at most n.
func sliceChunks(s []string, n int) func(func([]string) bool) {
	return func(yield func([]string) bool) {
		for len(s) > 0 {
			k := min(n, len(s))
			if !yield(s[:k]) {
				return
			}
			s = s[k:]
		}
	}
}

// listenLoop keeps a LISTEN on runChangedChannel until ctx ends,
// reconnecting RetryDelay after a failure. While it is down, long polls
// see other projectors' commits at their WaitRecheck.
func (s *Service) listenLoop(ctx context.Context) {
	for {
		err := s.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		s.metrics.listenLost.Add(ctx, 1)
		s.logger.WarnContext(ctx, "projector: LISTEN for other projectors' commits lost; reconnecting",
			"err", err, "retry_in", s.cfg.RetryDelay)
		if periodic.Sleep(ctx, s.cfg.RetryDelay) != nil {
			return
		}
	}
}

// listen connects, LISTENs, wakes every waiter once, then wakes the
// waiters of each run other processes' notifications name until the
// connection fails or ctx ends.
func (s *Service) listen(ctx context.Context) error {
	if k := s.cfg.TestingKnobs.BeforeListen; k != nil {
		k()
	}
	cc := s.pool.Config().ConnConfig.Copy()
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	cc.RuntimeParams["application_name"] = listenAppName
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return fmt.Errorf("projector: connect for LISTEN: %w", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, "LISTEN "+runChangedChannel); err != nil {
		return fmt.Errorf("projector: LISTEN %s: %w", runChangedChannel, err)
	}
	s.wakeAll()
	if k := s.cfg.TestingKnobs.Listening; k != nil {
		k(conn.PgConn().PID())
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, listenPing)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			s.wakeNotified(n.Payload)
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			if err := conn.Ping(ctx); err != nil {
				return fmt.Errorf("projector: ping the LISTEN connection: %w", err)
			}
		default:
			return fmt.Errorf("projector: wait for notifications: %w", err)
		}
	}
}

// wakeNotified wakes the waiters of the runs a notification names, unless
// this process sent it.
func (s *Service) wakeNotified(payload string) {
	origin, ids, ok := strings.Cut(payload, " ")
	if !ok || origin == s.origin {
		return
	}
	for id := range strings.SplitSeq(ids, ",") {
		s.wakeRun(id)
	}
}
