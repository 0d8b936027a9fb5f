package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/startstop"
	"github.com/weftrun/weft/services/projector/internal/readapi"
)

// Service is the snapshot projector with its read API and UI.
type Service struct {
	cfg  Config
	pool *pgxpool.Pool // the primary: every write, and the reads of the projection itself
	log  *eventlog.Store
	// read is the read API's pool: Config.ReadPool, else pool.
	read *pgxpool.Pool
	// replica measures ReadPool's replay lag, and fence holds the long
	// polls' wakeups until it has replayed their change; both nil without a
	// ReadPool (replica.go, fence.go).
	replica  *replayLag
	fence    *replayFence
	js       jetstream.JetStream
	logger   *slog.Logger
	metrics  metrics
	mp       metric.MeterProvider // its consumer keeper's; nil records nothing
	lagAlarm lagAlarm
	// seenFrom is when Start began consuming: an event persisted before it
	// could not have been applied sooner, so its lag counts from seenFrom
	// (observedLag). Written by Start before the consumer starts.
	seenFrom time.Time
	changes  notifier
	// origin names this process in its notifications (listen.go); wakes
	// holds the runs to notify.
	origin string
	wakes  *wakeQueue
	// api serves the read API and the UI (Handler).
	api *readapi.API

	life   startstop.Base
	served error // the HTTP server's, once the run loop returned
}

// New returns the projector over pool (snapshots, alerts and the event log)
// and nc (WEFT_EVENTS, which must exist: streams.Ensure). A nil Logger,
// MeterProvider or TracerProvider in cfg discards what it would receive.
// The read API reads cfg.ReadPool when it is set, pool otherwise.
func New(pool *pgxpool.Pool, nc *nats.Conn, cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if pool == nil || nc == nil {
		return nil, errors.New("projector: New needs a Postgres pool and a NATS connection")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("projector: jetstream: %w", err)
	}
	m, err := newMetrics(cfg.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("projector: metrics: %w", err)
	}
	s := &Service{cfg: cfg, pool: pool, log: eventlog.New(pool), js: js, metrics: m, mp: cfg.MeterProvider,
		logger: cfg.Logger.With("service", "projector"), origin: uuid.NewString(), wakes: newWakeQueue()}
	s.read = pool
	readLog := s.log
	if cfg.ReadPool != nil {
		s.read, readLog = cfg.ReadPool, eventlog.New(cfg.ReadPool)
		s.replica, s.fence = &replayLag{primary: pool, read: cfg.ReadPool}, newReplayFence()
	}
	if s.api, err = readapi.New(s.read, readLog, projection{s}, s.readAPIConfig()); err != nil {
		return nil, err
	}
	return s, nil
}

// readAPIConfig is the read API's part of the projector's Config.
func (s *Service) readAPIConfig() readapi.Config {
	c := s.cfg
	return readapi.Config{Keys: c.Keys, Authorizer: c.Authorizer, GatewayURL: c.GatewayURL, DevTokenFile: c.DevTokenFile,
		MaxWait: c.MaxWait, WaitRecheck: c.WaitRecheck, MaxLongPollsPerKey: c.MaxLongPollsPerKey, KeyRate: c.KeyRate,
		StepsPerToken: c.StepsPerToken, MaxChildrenPage: c.MaxChildrenPage, SnapshotCacheSteps: c.SnapshotCacheSteps,
		Logger: s.logger, Meter: s.metrics.meter, LongPollWaiting: c.TestingKnobs.LongPollWaiting}
}

// Handler returns the read API (docs/read-api.md) and its OpenAPI
// document (GET /openapi.json, no key needed), the UI's forwarding to
// the gateway (its signals; the schedules list, pause, resume and delete;
// the triggers list) and the UI itself. It
// serves no /metrics: the metrics count every tenant's runs and go to the
// MeterProvider, which the command serves on its ops listener only.
func (s *Service) Handler() http.Handler { return s.api.Handler() }

// projection is the projection as the read API sees it
// (readapi.Projection): the long polls' wakeups, through the replay fence
// with a ReadPool, and the ReadPool's replay lag.
type projection struct{ s *Service }

func (p projection) Wait(runID string) (<-chan struct{}, func()) { return p.s.changes.wait(runID) }

func (p projection) ReadLag() time.Duration { return p.s.replicaLag() }

// Run listens on Config.Addr and runs until ctx ends (see Serve).
func (s *Service) Run(ctx context.Context) error {
	ln, err := httpserve.Listen(ctx, s.cfg.Addr, "projector", "--addr or WEFT_PROJECTOR_ADDR")
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Start consumes events, runs the resync and rebuild loops, listens for
// other projectors' commits (listen.go), with a ReadPool measures its
// replay lag and fences the long polls' wakeups (replica.go, fence.go),
// and serves the read API and the UI on ln, until Stop (or the end of
// ctx) ends them. It returns once the consumer runs, with its error; the
// projector serves once (startstop's contract).
func (s *Service) Start(ctx context.Context, ln net.Listener) error {
	return s.life.Start(ctx, func(_, soft context.Context) (func(), error) {
		unregister, err := s.registerAllGauges()
		if err != nil {
			return nil, err
		}
		s.seenFrom = time.Now()
		l, err := s.consume(soft)
		if err != nil {
			unregister()
			return nil, err
		}
		return func() {
			defer unregister()
			defer func() { _ = l.Stop(context.WithoutCancel(soft)) }() // never cut short: its context does not end
			loops := []func(context.Context){s.resyncLoop, s.rebuildLoop, s.listenLoop, s.sendLoop}
			if s.replica != nil {
				loops = append(loops, s.replicaLagLoop, s.fenceLoop)
			}
			s.served = httpserve.ServeWith(soft, ln, s.Handler(), s.cfg.HTTP, "projector", s.logger, loops...)
		}, nil
	})
}

// registerAllGauges registers the projector's gauges, with a ReadPool its
// replica's too, and returns what unregisters them.
func (s *Service) registerAllGauges() (func(), error) {
	reg, err := s.registerGauges()
	if err != nil {
		return nil, err
	}
	if s.replica == nil {
		return func() { _ = reg.Unregister() }, nil
	}
	rreg, err := s.registerReplicaGauge()
	if err != nil {
		_ = reg.Unregister()
		return nil, err
	}
	return func() { _ = reg.Unregister(); _ = rreg.Unregister() }, nil
}

// Stop stops consuming (unacked messages are redelivered to another
// projector or the next start), drains the HTTP requests in flight for
// at most HTTP.ShutdownTimeout and waits for the loops; when ctx ends
// first it returns an error wrapping startstop.ErrDrainCutShort once they
// have. It returns the HTTP server's error, nil after a clean shutdown.
// Stop is idempotent and a no-op on a projector never started.
func (s *Service) Stop(ctx context.Context) error {
	if err := s.life.Stop(ctx); err != nil {
		return fmt.Errorf("projector: stop: %w", err)
	}
	return s.served
}

// Stopped returns a channel closed once a started projector has stopped.
func (s *Service) Stopped() <-chan struct{} { return s.life.Stopped() }

// Serve is Start on ln, then, once ctx ends or the HTTP server fails,
// Stop: the projector in the foreground. It returns nil after a clean
// shutdown.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	if err := s.Start(ctx, ln); err != nil {
		return err
	}
	<-s.Stopped()
	return s.Stop(ctx)
}

// afterCommit reports what a committed batch did: alerts, lag, metrics,
// and wakes the long polls of the runs it changed. Lag is observedLag:
// this process's clock at the commit minus persistedAt (Postgres's clock:
// hosts must keep their clocks in sync, NTP, for the figure to mean
// anything), or minus the start of this process's consumer for an event
// persisted before it; plus, with a ReadPool, the standby's last measured
// replay lag, after which the read API shows the commit (replica.go).
func (s *Service) afterCommit(ctx context.Context, changes map[string]runChange) {
	committed := time.Now()
	replica := s.replicaLag()
	var worst time.Duration
	var applied int64
	for runID, ch := range changes {
		s.reportRun(ctx, runID, ch)
		s.reportForged(ctx, runID, ch)
		for _, at := range ch.persisted {
			lag := s.observedLag(at, committed) + replica
			s.metrics.lag.Record(ctx, lag.Seconds())
			worst = max(worst, lag)
		}
		applied += int64(len(ch.persisted))
		if ch.resynced {
			s.metrics.resyncs.Add(ctx, 1)
		}
		if ch.changed {
			s.wakeRun(runID)
		}
	}
	if applied > 0 {
		s.observeLag(ctx, worst)
	}
	// Counted after the lag alarm: whoever reads the count has the alarm's
	// verdict on those events.
	s.metrics.applied.Add(ctx, applied)
}

// observedLag is the projection lag of an event persisted at persisted and
// committed at committed: the time it waited for a projector that could
// have seen it. An event persisted while this process was not consuming
// (down, restarting) waits from seenFrom, not from persisted: the time the
// projector was down is downtime, which its health checks report, not lag,
// and counting it raised PROJECTOR_LAG_HIGH at every restart.
func (s *Service) observedLag(persisted, committed time.Time) time.Duration {
	if persisted.Before(s.seenFrom) {
		persisted = s.seenFrom
	}
	return max(0, committed.Sub(persisted))
}
