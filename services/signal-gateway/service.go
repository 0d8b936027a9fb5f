// Package gateway is Weft's front door, the signal gateway: it starts runs
// and accepts signals over HTTP REST, JSON-RPC 2.0 and NATS subjects, and
// answers each in that transport's own shape (docs/api.md). Every
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
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/weftrun/weft/internal/auth"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// Defaults applied to a zero Config field.
const (
	DefaultAddr              = ":8080"
	DefaultMaxBodyBytes      = 2 << 20 // a 1 MiB plan, its input and the envelope
	DefaultMaxDepth          = 64      // plan.DefaultMaxDepth, plus the envelope
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 16 << 10
	DefaultRetentionInterval = time.Minute
	DefaultShutdownTimeout   = 10 * time.Second
)

// IntakeConfig holds the limits and retentions of runs and signals; see
// Config.Intake.
type IntakeConfig = intake.Config

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
	// MaxBodyBytes bounds a request body (HTTP) or message (NATS).
	MaxBodyBytes int64
	// MaxDepth bounds the nesting of a body's JSON.
	MaxDepth int
	// MaxBatch bounds a JSON-RPC batch.
	MaxBatch int
	// The HTTP server's timeouts and header limit: a slow client cannot
	// hold a connection longer than these.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxHeaderBytes                                            int
	// RetentionInterval is how often expired acceptance and run-request
	// records are removed.
	RetentionInterval time.Duration
	// ShutdownTimeout bounds the drain of in-flight requests on shutdown.
	ShutdownTimeout time.Duration
}

func (c Config) withDefaults() Config {
	c.Addr = cmp.Or(c.Addr, DefaultAddr)
	c.MaxBodyBytes = cmp.Or(c.MaxBodyBytes, DefaultMaxBodyBytes)
	c.MaxDepth = cmp.Or(c.MaxDepth, DefaultMaxDepth)
	c.ReadHeaderTimeout = cmp.Or(c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	c.ReadTimeout = cmp.Or(c.ReadTimeout, DefaultReadTimeout)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, DefaultWriteTimeout)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	c.MaxHeaderBytes = cmp.Or(c.MaxHeaderBytes, DefaultMaxHeaderBytes)
	c.RetentionInterval = cmp.Or(c.RetentionInterval, DefaultRetentionInterval)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, DefaultShutdownTimeout)
	if c.Authorizer == nil {
		c.Authorizer = auth.RoleAuthorizer{}
	}
	return c
}

// Service is the signal gateway.
type Service struct {
	cfg    Config
	nc     *nats.Conn
	intake *intake.Intake
	rpc    *jsonrpc.Server
	logger *slog.Logger
}

// New returns the gateway over pool and, for the NATS ingress, nc (nil
// serves HTTP only).
func New(pool *pgxpool.Pool, nc *nats.Conn, cfg Config, logger *slog.Logger) (*Service, error) {
	cfg = cfg.withDefaults()
	if cfg.Keys == nil {
		return nil, errors.New("gateway: no API keys configured")
	}
	in, err := intake.New(pool, eventlog.New(pool), cfg.Authorizer, cfg.Intake)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, nc: nc, intake: in, logger: logger.With("service", "signal-gateway")}
	s.rpc, err = jsonrpc.NewServer(map[string]jsonrpc.Method{
		"run.start":   s.rpcRunStart,
		"signal.send": s.rpcSignalSend,
	}, jsonrpc.Options{MaxBatch: cfg.MaxBatch}, s.logger)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return s, nil
}

// Run listens on Config.Addr and serves until ctx ends (see Serve).
func (s *Service) Run(ctx context.Context) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("gateway: listen on %s: %w (set another address with --addr or WEFT_GATEWAY_ADDR)", s.cfg.Addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves HTTP on ln, the NATS ingress when the gateway has a NATS
// connection, and the retention job, until ctx ends; then it stops taking
// requests and drains those in flight for at most ShutdownTimeout. It
// returns nil after a clean shutdown.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if s.nc != nil {
		stop, err := s.subscribe(ctx)
		if err != nil {
			return err
		}
		defer stop()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.retain(ctx)
	}()
	defer func() { <-done }()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	s.logger.InfoContext(ctx, "gateway listening", "addr", ln.Addr().String())
	select {
	case err := <-serveErr:
		return fmt.Errorf("gateway: serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("gateway: shutdown: %w", err)
	}
	return nil
}

// retain removes expired records every RetentionInterval until ctx ends.
func (s *Service) retain(ctx context.Context) {
	t := time.NewTicker(s.cfg.RetentionInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := s.intake.ExpiredDelete(ctx, 1000)
		switch {
		case err != nil && ctx.Err() == nil:
			s.logger.WarnContext(ctx, "retention job failed", "err", err)
		case n > 0:
			s.logger.InfoContext(ctx, "expired records removed", "count", n)
		}
	}
}
