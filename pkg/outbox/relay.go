package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/periodic"
	"github.com/weftrun/weft/pkg/startstop"
)

// Relay publishes committed outbox rows to JetStream and deletes them once
// acked. Any number of relays may run against one database: each partition
// is served by the relay holding its advisory lock, and the others stand
// by, retrying the lock every LockRetryInterval.
//
// Lifecycle (pkg/startstop): Start launches the relay and returns; Stop
// asks it to finish the batches in hand and waits, cutting them short
// when its ctx ends; cancelling Start's ctx stops it at once. Methods are
// safe for concurrent use.
type Relay struct {
	pool    *pgxpool.Pool
	js      jetstream.JetStream
	cfg     RelayConfig
	logger  *slog.Logger
	stats   counters
	held    atomic.Int32
	metrics *relayMetrics // nil without a MeterProvider
	life    startstop.Base
}

// RelayStats counts what a relay did since it started.
type RelayStats struct {
	// Published is the number of rows acked as new stream messages.
	Published uint64
	// Duplicates is the number of rows acked as already in the stream
	// (PubAck.Duplicate: an earlier publish was stored but not settled).
	Duplicates uint64
	// Failures is the number of publish failures charged to rows.
	Failures uint64
	// DeadLettered is the number of rows moved to outbox_dead.
	DeadLettered uint64
	// TransportFailures is the number of batches cut short because the bus
	// was unreachable, did not ack in time, or was full.
	TransportFailures uint64
	// Partitions is the number of partitions the relay holds now.
	Partitions int
}

type counters struct {
	published, duplicates, failures, dead, transport atomic.Uint64
}

// NewRelay returns a relay that reads the outbox through pool and publishes
// with js. js must sit on a connection that does not buffer publishes while
// reconnecting (nats.ReconnectBufSize(-1)): a buffered publish replayed on
// a new connection could overtake an earlier one lost with the old
// connection. cfg is validated (see RelayConfig.Validate); its nil Logger,
// MeterProvider and TracerProvider discard what they would receive.
func NewRelay(pool *pgxpool.Pool, js jetstream.JetStream, cfg RelayConfig) (*Relay, error) {
	if pool == nil || js == nil {
		return nil, errors.New("outbox: NewRelay needs a pool and a JetStream context")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if nc := js.Conn(); nc != nil && nc.Opts.AllowReconnect && nc.Opts.ReconnectBufSize != -1 {
		return nil, fmt.Errorf("%w: the NATS connection buffers publishes while reconnecting "+
			"(ReconnectBufSize %d); connect with nats.ReconnectBufSize(-1) so per-key order holds",
			ErrInvalidConfig, nc.Opts.ReconnectBufSize)
	}
	m, err := newRelayMetrics(cfg.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("outbox: metrics: %w", err)
	}
	cfg = cfg.WithDefaults()
	return &Relay{pool: pool, js: js, cfg: cfg, metrics: m,
		logger: cfg.Logger.With("component", "outbox_relay")}, nil
}

// Start opens the relay's Postgres session (LISTEN plus the partition
// locks), fails if it cannot, and otherwise runs the relay in the
// background until Stop is called or ctx ends. It returns
// startstop.ErrAlreadyStarted once a Start has succeeded.
func (r *Relay) Start(ctx context.Context) error {
	return r.life.Start(ctx, func(hard, soft context.Context) (func(), error) {
		gauges, err := r.observeGauges()
		if err != nil {
			return nil, err
		}
		sess, err := r.connect(hard)
		if err != nil {
			unregister(gauges)
			return nil, err
		}
		return func() {
			defer unregister(gauges)
			r.run(hard, soft, sess)
		}, nil
	})
}

// Stop asks the relay to finish the batches it is publishing, settle them
// and release its partitions, and waits for it. When ctx ends first, the
// batches are abandoned (their rows stay and are republished later, which
// JetStream dedupes) and Stop returns an error wrapping
// startstop.ErrDrainCutShort and ctx.Err() once everything has exited.
// Stop is idempotent, and a no-op on a relay that was never started.
func (r *Relay) Stop(ctx context.Context) error {
	if err := r.life.Stop(ctx); err != nil {
		return fmt.Errorf("outbox: relay stop: %w", err)
	}
	return nil
}

// Started returns a channel closed once Start has succeeded.
func (r *Relay) Started() <-chan struct{} { return r.life.Started() }

// Stopped returns a channel closed once a started relay has stopped, by
// Stop or by the end of Start's ctx.
func (r *Relay) Stopped() <-chan struct{} { return r.life.Stopped() }

// Stats returns the relay's counters. Safe to call at any time.
func (r *Relay) Stats() RelayStats {
	return RelayStats{
		Published:         r.stats.published.Load(),
		Duplicates:        r.stats.duplicates.Load(),
		Failures:          r.stats.failures.Load(),
		DeadLettered:      r.stats.dead.Load(),
		TransportFailures: r.stats.transport.Load(),
		Partitions:        int(r.held.Load()),
	}
}

// run is the control loop: serve with the session until it breaks or the
// relay stops, then reconnect. ctx ends every I/O at once; soft ends when
// Stop asks for a drain (and with ctx).
func (r *Relay) run(ctx, soft context.Context, sess *session) {
	for {
		r.serve(ctx, soft, sess)
		sess.close(ctx)
		sess = r.reconnect(soft)
		if sess == nil {
			return
		}
	}
}

// serve takes the partitions it can, starts a worker for each set of
// partitions won together (workers maps each partition to its worker),
// wakes workers on notifications and retries the other partitions every
// LockRetryInterval. It returns when the session fails (workers are
// cancelled at once: their locks are gone) or on Stop (workers finish
// their batch first).
func (r *Relay) serve(ctx, soft context.Context, sess *session) {
	workers := make(map[int]*worker)
	lost := true
	defer func() { r.stopWorkers(workers, lost) }()
	for {
		err := r.acquire(ctx, soft, sess, workers)
		if err == nil {
			err = r.listen(soft, sess, workers, time.Now().Add(r.cfg.LockRetryInterval))
		}
		if err != nil {
			lost = r.sessionFailed(soft, err)
			return
		}
	}
}

// sessionFailed logs a session failure unless the relay is stopping, and
// reports whether the failure lost the locks (rather than a stop).
func (r *Relay) sessionFailed(soft context.Context, err error) bool {
	if soft.Err() != nil {
		return false
	}
	r.logger.WarnContext(soft, "outbox: relay session lost; partitions released", "err", err)
	return true
}

// acquire tries the locks of the partitions without a worker and starts
// one worker for the locks won. With every partition held it still runs a
// query: the session's heartbeat.
func (r *Relay) acquire(ctx, soft context.Context, sess *session, workers map[int]*worker) error {
	var want []int32
	for p := range Partitions {
		if workers[p] == nil {
			want = append(want, int32(p))
		}
	}
	won, err := sess.tryLocks(soft, want)
	if err != nil {
		return err
	}
	if len(won) > 0 {
		w := startWorker(ctx, soft, r, won)
		for _, p := range won {
			workers[int(p)] = w
		}
	}
	r.held.Store(int32(len(workers)))
	if len(won) > 0 {
		r.logger.InfoContext(ctx, "outbox: relay took partitions", "partitions", won, "held", len(workers))
	}
	return nil
}

// listen waits for notifications until the deadline and wakes the workers
// they concern. It returns nil at the deadline and an error when the
// session fails or the relay stops.
func (r *Relay) listen(soft context.Context, sess *session, workers map[int]*worker, until time.Time) error {
	for {
		n, err := sess.wait(soft, until)
		if err != nil || n == nil {
			return err
		}
		wakeFor(workers, n.Payload)
	}
}

// stopWorkers ends the workers and waits for them: at once when the locks
// were lost, after their current batch otherwise.
func (r *Relay) stopWorkers(workers map[int]*worker, lost bool) {
	for _, w := range workers {
		if lost {
			w.cancel() // idempotent: a worker of many partitions is met once per partition
		}
	}
	for _, w := range workers {
		<-w.done
		w.cancel()
	}
	r.held.Store(0)
}

// reconnect opens a new session after LockRetryInterval, retrying until it
// succeeds or the relay stops (then it returns nil).
func (r *Relay) reconnect(soft context.Context) *session {
	for {
		if periodic.Sleep(soft, r.cfg.LockRetryInterval) != nil {
			return nil
		}
		sess, err := r.connect(soft)
		if err == nil {
			return sess
		}
		r.logger.WarnContext(soft, "outbox: relay session reconnect failed", "err", err)
	}
}
