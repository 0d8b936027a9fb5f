// Package engine drives runs. It consumes the events it must react to
// (RunApproved, SignalAccepted) from WEFT_EVENTS and worker results from
// WEFT_RESULTS, delivers durable timers from Postgres, and sweeps Postgres
// for runs the bus failed. Each of those is
// one round (internal/round): load the run, decide (internal/decide, a pure
// function), append with a compare-and-swap on the run's head, write the
// follow-up tasks to the outbox, commit, then ack.
//
// The engine uses the nats.go jetstream package directly rather than a
// Watermill router: a round needs JetStream's delivery metadata (the
// delivery count), explicit Nak-with-delay and Term, and, next, batched
// rounds fed by one fetch, which a per-message router does not offer.
//
// Any number of engines may run against one database and one JetStream:
// they divide the runs' partitions among them, each consuming its own
// (partitions.go), and the head compare-and-swap keeps the rounds of one
// run safe whenever two engines meet on it.
package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/pkg/startstop"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/tracing"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// Defaults applied to a zero Config field.
//
// DefaultConcurrency is low on purpose: a shard runs the messages waiting
// for it as one transaction, so fewer shards make bigger batches and fewer
// round trips per round (BenchmarkSystem measures it; BENCHMARKS.md). Two
// shards, not one, so a slow round holds up half of the runs, not all. A
// Postgres with many cores may want more.
const (
	DefaultConcurrency       = 2
	DefaultMaxBatch          = 32
	DefaultRoundLinger       = 3 * time.Millisecond
	DefaultAckWait           = 30 * time.Second
	DefaultRetryDelay        = time.Second
	DefaultTimerPollInterval = time.Second
	DefaultTimerBatch        = 100
	DefaultSweepInterval     = 10 * time.Second
	DefaultStallAfter        = 30 * time.Second
	DefaultTaskGrace         = time.Minute
	DefaultSweepBatch        = 100
	DefaultQueueInterval     = time.Second
	DefaultQueueBatch        = 100
	DefaultMaxResultBytes    = 256 << 10
	DefaultMaxOutputDepth    = 1000
)

// Config tunes the engine. The zero value of each field means its default.
type Config struct {
	// Concurrency is how many shards each consumer has (internal/bus/shards):
	// rounds of different shards run at once.
	Concurrency int
	// MaxBatch is how many waiting messages of one shard run as one batch
	// of rounds, in one transaction.
	MaxBatch int
	// RoundLinger is how long a shard with fewer than MaxBatch messages
	// waiting waits for more before it runs them as one batch of rounds
	// (shards.Linger): under a light load the rounds of several runs then
	// share a transaction, its round trips and its commit. Each round waits
	// up to it, so a run's latency grows by up to RoundLinger a round; under
	// load batches fill and nothing waits. Default 3ms; a negative value
	// runs what is waiting at once; at most MaxRoundLinger.
	RoundLinger time.Duration
	// AckWait is how long JetStream waits for a round's ack before it
	// redelivers the message; it bounds a round's duration.
	AckWait time.Duration
	// RetryDelay is the Nak delay after a round failed (database down, too
	// many conflicts): the message comes back after it.
	RetryDelay time.Duration
	// TimerPollInterval is the longest the timer loop sleeps.
	TimerPollInterval time.Duration
	// TimerBatch is how many due timers one scan delivers.
	TimerBatch int
	// SweepInterval is how often the sweep looks for stalled runs, between
	// MinSweepInterval and MaxSweepInterval.
	SweepInterval time.Duration
	// StallAfter is how long a run's log must stand still before the sweep
	// re-drives it, and how long between two sweeps of one run; between
	// MinStallAfter and MaxStallAfter.
	StallAfter time.Duration
	// TaskGrace is how long past its timeout a started attempt may go
	// without an outcome before the sweep sends its task again (one not
	// started within its timeout is sent again at once); between
	// MinTaskGrace and MaxTaskGrace. docs/engine.md, "Recovery times",
	// gives what each lost message costs under these three.
	TaskGrace time.Duration
	// SweepBatch bounds the runs one sweep re-drives.
	SweepBatch int
	// Admission is each environment's limit of concurrent runs and its
	// policy. A run approved into a full environment under QUEUE is queued
	// (RunQueued) and started by the run-queue reconciler, oldest first,
	// when a place frees. REJECT is enforced at approval (runstart).
	Admission admission.Limits
	// QueueInterval is how often the run-queue reconciler offers queued
	// runs a start, and QueueBatch how many per pass.
	QueueInterval time.Duration
	QueueBatch    int
	// MaxRunDepth is how deep child runs nest: a subPlan step of a run at
	// this depth fails with CHILD_RUN_REFUSED instead of starting a child
	// (docs/plans.md, "Child runs"). Zero means plan.DefaultMaxRunDepth
	// (8).
	MaxRunDepth int
	// MaxResultBytes bounds a completed result's output plus its
	// artifacts, inclusive; a larger result fails its attempt with
	// CodeResultTooLarge, not retryable. It must stay under the event
	// log's eventData limit. Default 256 KiB.
	MaxResultBytes int
	// MaxOutputDepth bounds the nesting of a completed result's output
	// (the top level is depth 1, inclusive); a deeper one fails its
	// attempt with CodeInvalidOutput, not retryable, as does one jsonb
	// cannot hold (a number past numeric's range, the escape \u0000).
	// Postgres refuses nesting past some thousands with "stack depth limit
	// exceeded", a failure of the round's write rather than of the step.
	// Default 1000.
	MaxOutputDepth int
	// HeartbeatMaxAge is how long the heartbeat bucket keeps a step's last
	// heartbeat; an older one is gone, so a retry after it gets no
	// LastHeartbeat. Default DefaultHeartbeatMaxAge (24h).
	HeartbeatMaxAge time.Duration
	// HeartbeatBucketBytes bounds the heartbeat bucket's storage. Default
	// DefaultHeartbeatBucketBytes (256 MiB).
	HeartbeatBucketBytes int64
	// Logger receives the engine's logs. Nil discards them.
	Logger *slog.Logger
	// TracerProvider traces the rounds the engine runs for bus messages:
	// each is a span parented to the trace context in the message's
	// headers, and the events and tasks it writes carry the span's context.
	// Nil traces nothing but still passes a message's context on to what
	// its round writes.
	TracerProvider trace.TracerProvider
	// MeterProvider receives the engine's metrics: round durations
	// (weft.engine.round.duration) and the events its rounds append
	// (weft.events.appended). Nil records nothing, at no cost to a round.
	MeterProvider metric.MeterProvider
	// CheckpointOwnership is SingleOwner (the default, also for "") or
	// CASRequired; docs/checkpoints.md.
	CheckpointOwnership CheckpointOwnership
	// CheckpointEverySteps and CheckpointEveryBytes are the history
	// rotation thresholds: a round writes a new checkpoint of its run once
	// this many step attempts have ended, or this many bytes of events
	// (round.HistoryBytes) have been appended, since the last one. Defaults
	// 50 and 1 MiB; a negative value turns that trigger off.
	CheckpointEverySteps, CheckpointEveryBytes int
	// WarmRuns is how many runs the engine keeps warm: their states as its
	// last round of each left them, so that the next round reads and folds
	// only the events appended since (docs/engine.md, "Warm runs").
	// Default 4096; a negative value keeps none.
	WarmRuns int
	// StoreCapabilities, if set, reports the store's capabilities in place
	// of the event log's own; New checks CheckpointOwnership against them.
	StoreCapabilities CapabilityReporter
	// TaskKeys sign the tasks the engine dispatches and verify the token
	// of every worker result and reconciliation lookup: one without a
	// token the engine's keys signed for its run, step and logical
	// attempt is dropped (tokens.go). Every engine of a deployment needs
	// the same keys. Nil means a random key of this Service only, which
	// refuses the results of tasks another engine, or this one before a
	// restart, dispatched (the sweep sends those tasks again): fine for
	// one engine in tests, never for a deployment (`weft engine` requires
	// a key).
	TaskKeys *task.Signer
	// PartitionLease is how long an engine keeps its partitions without a
	// heartbeat of its membership, and its partition consumers' PinnedTTL:
	// about the time a killed engine's runs wait before another engine
	// takes them. At least MinPartitionLease. Default
	// DefaultPartitionLease.
	PartitionLease time.Duration
	// EngineID names this engine in the membership; empty means a new id
	// of the host, the pid and random bits. Two engines must never share
	// one.
	EngineID string
	// Streams are the limits of the lanes streams the engine creates, one
	// per task queue (streams.TaskLanes); the zero value means
	// streams.Config's defaults, as `weft migrate` gives the other streams.
	Streams streams.Config
	// EventForm is the form of the bus messages of the events the rounds
	// write (streams.EventForm); empty means streams.EventFormBatch, one
	// message per round and run.
	EventForm streams.EventForm
	// ReconcileReplyPrefixes are the reply subjects the engine answers
	// reconciliation lookups on (reconcile_reply.go); a lookup with any
	// other reply is dropped unanswered. Empty means
	// DefaultReconcileReplyPrefixes.
	ReconcileReplyPrefixes []string
	// TestingKnobs are hooks for crash tests. Leave them zero in production.
	TestingKnobs TestingKnobs
}

// TestingKnobs inject faults for crash tests.
type TestingKnobs struct {
	// BeforeCommit runs inside every round that decided something, after
	// its writes and before its commit.
	BeforeCommit func()
	// AfterCommit runs after a message's round committed and before the
	// message is acked.
	AfterCommit func()
}

func (c Config) withDefaults() Config {
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	c.MaxBatch = cmp.Or(c.MaxBatch, DefaultMaxBatch)
	c.RoundLinger = cmp.Or(c.RoundLinger, DefaultRoundLinger) // a negative value (off) is kept
	c.AckWait = cmp.Or(c.AckWait, DefaultAckWait)
	c.RetryDelay = cmp.Or(c.RetryDelay, DefaultRetryDelay)
	c.TimerPollInterval = cmp.Or(c.TimerPollInterval, DefaultTimerPollInterval)
	c.TimerBatch = cmp.Or(c.TimerBatch, DefaultTimerBatch)
	c.SweepInterval = cmp.Or(c.SweepInterval, DefaultSweepInterval)
	c.StallAfter = cmp.Or(c.StallAfter, DefaultStallAfter)
	c.TaskGrace = cmp.Or(c.TaskGrace, DefaultTaskGrace)
	c.SweepBatch = cmp.Or(c.SweepBatch, DefaultSweepBatch)
	c.QueueInterval = cmp.Or(c.QueueInterval, DefaultQueueInterval)
	c.QueueBatch = cmp.Or(c.QueueBatch, DefaultQueueBatch)
	c.MaxResultBytes = cmp.Or(c.MaxResultBytes, DefaultMaxResultBytes)
	c.MaxOutputDepth = cmp.Or(c.MaxOutputDepth, DefaultMaxOutputDepth)
	c.HeartbeatMaxAge = cmp.Or(c.HeartbeatMaxAge, DefaultHeartbeatMaxAge)
	c.HeartbeatBucketBytes = cmp.Or(c.HeartbeatBucketBytes, DefaultHeartbeatBucketBytes)
	c.PartitionLease = cmp.Or(c.PartitionLease, DefaultPartitionLease)
	if len(c.ReconcileReplyPrefixes) == 0 {
		c.ReconcileReplyPrefixes = DefaultReconcileReplyPrefixes
	}
	if c.EngineID == "" {
		c.EngineID = newEngineID()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.CheckpointOwnership = cmp.Or(c.CheckpointOwnership, SingleOwner)
	return c
}

// roundConfig is the round runner's configuration, from cfg with its
// defaults applied and its task keys set.
func roundConfig(js jetstream.JetStream, cfg Config) round.Config {
	return round.Config{
		Admission:       cfg.Admission,
		BeforeCommit:    cfg.TestingKnobs.BeforeCommit,
		CheckpointSteps: cfg.CheckpointEverySteps,
		CheckpointBytes: cfg.CheckpointEveryBytes,
		CASRequired:     cfg.CheckpointOwnership == CASRequired,
		WarmRuns:        cfg.WarmRuns,
		TaskSigner:      cfg.TaskKeys,
		EnsureLanes:     newLaneStreams(js, cfg.Streams).ensure,
		MaxRunDepth:     cfg.MaxRunDepth,
	}
}

// Service is the engine service.
type Service struct {
	pool   *pgxpool.Pool
	nc     *nats.Conn
	js     jetstream.JetStream
	runner timedRunner
	cfg    Config
	logger *slog.Logger
	tracer trace.Tracer // cfg.TracerProvider's, or a no-op one
	forged forgedMetrics
	// replyRefused counts lookups dropped for their reply subject.
	replyRefused metric.Int64Counter
	// heartbeats is the heartbeat bucket, set by Start before the timer
	// loop starts (heartbeats.go).
	heartbeats jetstream.KeyValue
	held       atomic.Int64 // partitions held (partitions.go)
	// keyWake wakes the key queue (keyqueue.go) when a round gave
	// concurrency slots back.
	keyWake chan struct{}
	life    startstop.Base
}

// New returns the engine over pool and nc. The Weft streams must exist
// (streams.Ensure); the engine creates its consumers. A nil Logger,
// MeterProvider or TracerProvider in cfg discards what it would receive.
// A sweep timing outside its limits is a *LimitError (Config.Validate).
func New(pool *pgxpool.Pool, nc *nats.Conn, cfg Config) (*Service, error) {
	if pool == nil || nc == nil {
		return nil, errors.New("engine: New needs a Postgres pool and a NATS connection")
	}
	if err := cfg.Admission.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("engine: jetstream: %w", err)
	}
	cfg = cfg.withDefaults()
	logger := cfg.Logger.With("service", "engine")
	if err := checkOwnership(pool, cfg); err != nil {
		return nil, err
	}
	if cfg.TaskKeys == nil {
		if cfg.TaskKeys, err = ephemeralTaskKeys(); err != nil {
			return nil, err
		}
		logger.Warn("engine: no task key configured; using a random key of this process, which refuses the results of tasks other engines dispatched")
	}
	keyWake := make(chan struct{}, 1)
	rc := roundConfig(js, cfg)
	rc.Released = func() {
		select {
		case keyWake <- struct{}{}:
		default:
		}
	}
	runner, err := newTimedRunner(pool, cfg, rc)
	if err != nil {
		return nil, err
	}
	forged, err := newForgedMetrics(cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	replyRefused, err := newReplyRefusedCounter(cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	return &Service{pool: pool, nc: nc, js: js, cfg: cfg, logger: logger, runner: runner, forged: forged,
		replyRefused: replyRefused, tracer: tracing.Tracer(cfg.TracerProvider, tracerName), keyWake: keyWake}, nil
}

// Start starts the engine: it answers workers' reconciliation lookups,
// creates the heartbeat bucket and its consumers, and then consumes events
// and results, fires timers, sweeps stalled runs and starts queued ones in
// the background until Stop is called or ctx ends. The end of ctx is a
// hard stop: the lanes drop the messages they hold (JetStream redelivers
// them); rounds in flight still run to their commit or AckWait. Start
// returns startstop.ErrAlreadyStarted once it has succeeded.
func (s *Service) Start(ctx context.Context) error {
	return s.life.Start(ctx, s.start)
}

// start sets the engine up for Start and returns its run loop. soft plays
// the part of the engine's context: it ends when a drain begins.
func (s *Service) start(hard, soft context.Context) (func(), error) {
	stopLookups, err := s.serveReconcile(soft)
	if err != nil {
		return nil, err
	}
	if err := s.ensureHeartbeats(soft); err != nil {
		stopLookups()
		return nil, err
	}
	gauge, err := s.registerPartitionGauge()
	if err != nil {
		stopLookups()
		return nil, err
	}
	consumers, err := s.startConsumers(soft)
	if err != nil {
		if gauge != nil {
			_ = gauge.Unregister()
		}
		stopLookups()
		return nil, err
	}
	consumers.awaitFirstShare(soft, s.cfg.PartitionLease)
	s.logger.InfoContext(soft, "engine running", "concurrency", s.cfg.Concurrency, "engine_id", s.cfg.EngineID)
	return func() {
		defer stopLookups()
		var wg sync.WaitGroup
		wg.Go(func() { s.timerLoop(soft) })
		wg.Go(func() { s.sweepLoop(soft) })
		wg.Go(func() { s.runQueueLoop(soft) })
		wg.Go(func() { s.keyQueueLoop(soft) })
		<-soft.Done()
		consumers.stop(hard)
		wg.Wait()
		if gauge != nil {
			_ = gauge.Unregister()
		}
	}, nil
}

// Stop stops taking messages, lets the lanes handle the messages they
// hold, and waits for the rounds in flight, the timer, sweep and run-queue
// loops. When ctx ends first, the lanes drop the messages they still hold
// and Stop returns an error wrapping startstop.ErrDrainCutShort once the
// rounds in flight are done. Stop is idempotent, and a no-op on an engine
// never started.
func (s *Service) Stop(ctx context.Context) error {
	if err := s.life.Stop(ctx); err != nil {
		return fmt.Errorf("engine: stop: %w", err)
	}
	return nil
}

// Started returns a channel closed once Start has succeeded.
func (s *Service) Started() <-chan struct{} { return s.life.Started() }

// Stopped returns a channel closed once a started engine has stopped.
func (s *Service) Stopped() <-chan struct{} { return s.life.Stopped() }

// Run runs the engine until ctx ends (startstop.Run): Start, then, once
// ctx ends, Stop with a drain that is not bounded, since each round is
// (by AckWait). It returns an error only when it cannot start; a ctx that
// ends while it starts is a stop, not a failure.
func (s *Service) Run(ctx context.Context) error {
	if err := startstop.Run(ctx, s, 0); err != nil {
		return startErr(ctx, err)
	}
	return nil
}

// startErr is Run's error for a start-up that failed with err: none when
// ctx ended, since the caller asked Run to stop.
func startErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil //nolint:nilerr // stopped while starting: not a failure
	}
	return err
}
