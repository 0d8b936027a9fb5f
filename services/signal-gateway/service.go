// Package gateway is Weft's front door, the signal gateway: it starts runs
// and accepts signals over HTTP REST, JSON-RPC 2.0 and NATS subjects, keeps
// schedules and event triggers and fires them (docs/schedules.md), and
// answers each request in its transport's own shape (docs/api.md). Every
// transport decodes strictly, authenticates the caller's API key, and
// hands the request to internal/intake, which decides and commits it in
// one Postgres transaction with its outbox rows, or commits nothing.
//
// Starts are idempotent on the run-request tuple and signals on (runId,
// signalName, signalId), across transports: a NATS retry of an HTTP
// request gets the HTTP request's result.
package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/policy/keylimit"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/periodic"
	"github.com/weftrun/weft/pkg/startstop"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/tracing"
	"github.com/weftrun/weft/services/signal-gateway/internal/bulk"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
	"github.com/weftrun/weft/services/signal-gateway/internal/registry"
	"github.com/weftrun/weft/services/signal-gateway/internal/schedule"
	"github.com/weftrun/weft/services/signal-gateway/internal/trigger"
)

// Defaults applied to a zero Config field.
const (
	DefaultAddr              = ":8080"
	DefaultMaxBodyBytes      = 2 << 20 // a 1 MiB plan, its input and the envelope
	DefaultMaxDepth          = 64      // plan.DefaultMaxDepth, plus the envelope
	DefaultRetentionInterval = time.Minute
)

// IntakeConfig holds the limits and retentions of runs and signals; see
// Config.Intake.
type IntakeConfig = intake.Config

// ScheduleConfig tunes schedules and the scheduler; see Config.Schedules.
type ScheduleConfig = schedule.Config

// TriggerConfig tunes event triggers; see Config.Triggers.
type TriggerConfig = trigger.Config

// BulkConfig tunes bulk jobs; see Config.Bulk.
type BulkConfig = bulk.Config

// The defaults of BulkConfig's limits.
const (
	DefaultBulkRate    = bulk.DefaultRate
	DefaultBulkMaxRuns = bulk.DefaultMaxRuns
)

// Config tunes the gateway. The zero value of each field means its
// default; Keys is required.
type Config struct {
	// Addr is the HTTP listen address.
	Addr string
	// Keys are the API keys callers present as bearer tokens.
	Keys *auth.Keys
	// Authorizer decides what a key may do; nil means auth.RoleAuthorizer.
	Authorizer auth.Authorizer
	// Intake holds the limits and retentions of runs and signals.
	Intake IntakeConfig
	// Schedules tunes schedules and the scheduler (docs/schedules.md).
	// Its Now defaults to Intake.Now, its MeterProvider to MeterProvider.
	Schedules ScheduleConfig
	// DisableScheduler keeps this gateway from firing schedules; the
	// schedules API still works. Some gateway of the database must fire
	// them; any number may, the claim keeps them apart.
	DisableScheduler bool
	// Triggers tunes event triggers. Its Now defaults to Intake.Now.
	Triggers TriggerConfig
	// Bulk tunes bulk jobs (docs/api.md, "Bulk operations"): the rate at
	// which a job acts on runs, the runs it may match. Its Now defaults to
	// Intake.Now.
	Bulk BulkConfig
	// DisableBulkRunner keeps this gateway from working on bulk jobs; the
	// bulk API still takes them. Some gateway of the database must run
	// them; any number may, the lease keeps them apart.
	DisableBulkRunner bool
	// MaxBodyBytes bounds a request body (HTTP) or message (NATS).
	MaxBodyBytes int64
	// MaxDepth bounds the nesting of a body's JSON.
	MaxDepth int
	// MaxBatch bounds a JSON-RPC batch: a longer one is refused whole
	// (-32600) before any call runs. Zero means jsonrpc.DefaultMaxBatch
	// (100).
	MaxBatch int
	// KeyRate bounds the requests of one API key on every transport
	// together (REST, JSON-RPC, NATS): Rate per second sustained, Burst
	// at once; a JSON-RPC batch costs one per call. A request past it is
	// refused with CodeRateLimited (HTTP 429, Retry-After; JSON-RPC
	// -32029; the NATS reply's Weft-Status 429) after authentication and
	// before its body is decoded or anything is written, and counted in
	// weft.gateway.limit.refusals. The zero value means
	// keylimit.DefaultRate and keylimit.DefaultBurst (100/s, burst 200);
	// keylimit.Off (a negative Rate) turns it off. The buckets are this
	// gateway's: N gateways behind a balancer allow up to N times it.
	KeyRate keylimit.Limit
	// ReplyPrefixes are the reply subjects the NATS ingress answers: a
	// request whose reply subject starts with none of them is dropped,
	// unhandled and unanswered (counted in weft.gateway.ingress.dropped,
	// logged at debug level), so a caller cannot have an answer published
	// on a stream's subject. Nil means DefaultReplyPrefixes. A request
	// without a reply subject is handled and not answered.
	ReplyPrefixes []string
	// MaxErrorMessageBytes bounds the message, and each string detail, of
	// a refusal sent back on any transport; a longer one is cut and ends
	// in "…". At least 16.
	MaxErrorMessageBytes int
	// ReadAPIURL is the read API's base URL (the projector's, e.g.
	// http://localhost:8081), named in the 404 of a read sent to the
	// gateway (GET /v1/runs/{runId}). Empty: the answer names no URL.
	ReadAPIURL string
	// EventForm is the form of the bus messages of the events the gateway
	// writes (streams.EventForm); empty means streams.EventFormBatch.
	// Its inputs (RunApproved, SignalAccepted) are one event a message
	// in both.
	EventForm streams.EventForm
	// HTTP holds the server's timeouts, header limit and shutdown drain:
	// a slow client cannot hold a connection longer than these.
	HTTP httpserve.Limits
	// RetentionInterval is how often expired acceptance and run-request
	// records are removed.
	RetentionInterval time.Duration
	// Logger receives the gateway's logs, and Intake's unless it has its
	// own. Nil discards them.
	Logger *slog.Logger
	// TracerProvider traces each request, REST, JSON-RPC or NATS, with a
	// span continuing the caller's traceparent; what the request commits
	// carries the span's context to the bus. Nil traces nothing but still
	// passes the caller's context on.
	TracerProvider trace.TracerProvider
	// MeterProvider receives the gateway's metrics: signals and trigger
	// events by outcome and transport (weft.gateway.signals,
	// weft.gateway.trigger.events), schedule fires and skipped fire times
	// (weft.gateway.schedule.fires, weft.gateway.schedule.skipped),
	// requests refused by a named limit, by limit and transport
	// (weft.gateway.limit.refusals) and the events it appends
	// (weft.events.appended). Nil records nothing.
	MeterProvider metric.MeterProvider
}

func (c Config) withDefaults() Config {
	c.Addr = cmp.Or(c.Addr, DefaultAddr)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, DefaultMaxBodyBytes)
	c.MaxDepth = cmp.Or(c.MaxDepth, DefaultMaxDepth)
	if c.ReplyPrefixes == nil {
		c.ReplyPrefixes = DefaultReplyPrefixes
	}
	c.MaxErrorMessageBytes = cmp.Or(c.MaxErrorMessageBytes, DefaultMaxErrorMessageBytes)
	c.HTTP = c.HTTP.WithDefaults()
	c.RetentionInterval = cmp.Or(c.RetentionInterval, DefaultRetentionInterval)
	if c.Authorizer == nil {
		c.Authorizer = auth.RoleAuthorizer{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Schedules.Now == nil {
		c.Schedules.Now = c.Intake.Now
	}
	if c.Schedules.MeterProvider == nil {
		c.Schedules.MeterProvider = c.MeterProvider
	}
	if c.Triggers.Now == nil {
		c.Triggers.Now = c.Intake.Now
	}
	return c
}

// checkIngress refuses reply prefixes and an error cap that would let
// the ingress answer on any subject or cut every message to nothing.
func (c Config) checkIngress() error {
	for _, p := range c.ReplyPrefixes {
		if p == "" || strings.ContainsAny(p, "*> \t") {
			return fmt.Errorf("gateway: reply prefix %q must be a literal, non-empty subject prefix", p)
		}
	}
	if c.MaxErrorMessageBytes < minErrorMessageBytes {
		return fmt.Errorf("gateway: MaxErrorMessageBytes %d is less than %d", c.MaxErrorMessageBytes, minErrorMessageBytes)
	}
	return nil
}

// Service is the signal gateway.
type Service struct {
	cfg       Config
	bulk      *bulk.Service
	nc        *nats.Conn
	intake    *intake.Intake
	schedules *schedule.Service
	plans     *registry.Service
	triggers  *trigger.Service
	rpc       *jsonrpc.Server
	keyRate   *keylimit.Limiter
	logger    *slog.Logger
	metrics   *signalMetrics // nil without a MeterProvider
	tracer    trace.Tracer   // cfg.TracerProvider's, or a no-op one

	life   startstop.Base
	served error // the HTTP server's, once the run loop returned
}

// New returns the gateway over pool and, for the NATS ingress, nc (nil
// serves HTTP only). A nil Logger, MeterProvider or TracerProvider in cfg
// discards what it would receive.
func New(pool *pgxpool.Pool, nc *nats.Conn, cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	if cfg.Keys == nil {
		return nil, errors.New("gateway: no API keys configured")
	}
	if err := cfg.checkIngress(); err != nil {
		return nil, err
	}
	m, err := newSignalMetrics(cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	appended, err := journal.NewMetrics(cfg.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("gateway: metrics: %w", err)
	}
	logger := cfg.Logger.With("service", "signal-gateway")
	icfg := cfg.Intake
	icfg.Logger = cmp.Or(icfg.Logger, logger)
	log := eventlog.New(pool)
	in, err := intake.New(pool, log, journal.New(log, journal.WithMetrics(appended), journal.WithEventForm(cfg.EventForm)), cfg.Authorizer, icfg)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, nc: nc, intake: in, metrics: m, logger: logger,
		tracer: tracing.Tracer(cfg.TracerProvider, tracerName)}
	if s.keyRate, err = keylimit.New(keylimit.Config{Limit: cfg.KeyRate, Now: cfg.Intake.Now}); err != nil {
		return nil, fmt.Errorf("gateway: KeyRate: %w", err)
	}
	s.plans = registry.New(pool, in, cfg.Authorizer, registry.Config{Now: cfg.Intake.Now})
	if s.schedules, err = schedule.New(pool, in, planResolver{s}, cfg.Authorizer, cfg.Schedules, s.logger); err != nil {
		return nil, err
	}
	if s.triggers, err = trigger.New(pool, in, planResolver{s}, cfg.Authorizer, cfg.Triggers); err != nil {
		return nil, err
	}
	bulkCfg := cfg.Bulk
	if bulkCfg.Now == nil {
		bulkCfg.Now = cfg.Intake.Now
	}
	bulkCfg.Logger = cmp.Or(bulkCfg.Logger, s.logger)
	s.bulk = bulk.New(pool, in, cfg.Authorizer, bulkCfg)
	s.rpc, err = jsonrpc.NewServer(s.rpcMethods(), jsonrpc.Options{MaxBatch: cfg.MaxBatch}, s.logger)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return s, nil
}

// Run listens on Config.Addr and serves until ctx ends (see Serve).
func (s *Service) Run(ctx context.Context) error {
	ln, err := httpserve.Listen(ctx, s.cfg.Addr, "gateway", "--addr or WEFT_GATEWAY_ADDR")
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Start serves HTTP on ln, the NATS ingress when the gateway has a NATS
// connection, the retention job and, unless DisableScheduler, the
// scheduler, and unless DisableBulkRunner, the bulk jobs' runner, until
// Stop (or the end of ctx) ends them. It returns once the
// ingress is subscribed, with its error; the gateway serves once
// (startstop's contract: a second Start is startstop.ErrAlreadyStarted).
func (s *Service) Start(ctx context.Context, ln net.Listener) error {
	return s.life.Start(ctx, func(_, soft context.Context) (func(), error) {
		unsubscribe := func() {}
		if s.nc != nil {
			var err error
			if unsubscribe, err = s.subscribe(soft); err != nil {
				return nil, err
			}
		}
		return func() {
			defer unsubscribe()
			loops := []func(context.Context){s.retain}
			if !s.cfg.DisableScheduler {
				loops = append(loops, s.schedules.Run)
			}
			if !s.cfg.DisableBulkRunner {
				loops = append(loops, s.bulk.Run)
			}
			s.served = httpserve.ServeWith(soft, ln, s.Handler(), s.cfg.HTTP, "gateway", s.logger, loops...)
		}, nil
	})
}

// Stop stops taking requests, drains those in flight for at most
// HTTP.ShutdownTimeout, drains the NATS ingress and waits for the
// retention job and the scheduler to stop; when ctx ends first it returns
// an error wrapping startstop.ErrDrainCutShort once they have. It returns
// the HTTP server's error, nil after a clean shutdown. Stop is idempotent
// and a no-op on a gateway never started.
func (s *Service) Stop(ctx context.Context) error {
	if err := s.life.Stop(ctx); err != nil {
		return fmt.Errorf("gateway: stop: %w", err)
	}
	return s.served
}

// Stopped returns a channel closed once a started gateway has stopped.
func (s *Service) Stopped() <-chan struct{} { return s.life.Stopped() }

// Serve is Start on ln, then, once ctx ends or the HTTP server fails,
// Stop: the gateway in the foreground. It returns nil after a clean
// shutdown.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	if err := s.Start(ctx, ln); err != nil {
		return err
	}
	<-s.Stopped() // ctx's end ends the server, which drains as Stop does
	return s.Stop(ctx)
}

// retain removes expired records every RetentionInterval until ctx ends.
func (s *Service) retain(ctx context.Context) {
	loop := periodic.Loop{Interval: s.cfg.RetentionInterval, Logger: s.logger, Failed: "retention job failed"}
	loop.Run(ctx, func(ctx context.Context) error {
		n, err := s.intake.ExpiredDelete(ctx, 1000)
		if err == nil {
			var jobs int64
			jobs, err = s.bulk.ExpiredDelete(ctx, 1000)
			n += jobs
		}
		if err == nil && n > 0 {
			s.logger.InfoContext(ctx, "expired records removed", "count", n)
		}
		return err
	})
}
