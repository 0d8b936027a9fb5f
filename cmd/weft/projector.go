package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/internal/auth"
	"github.com/weftrun/weft/internal/metrics"
	"github.com/weftrun/weft/services/projector"
)

// runProjector is `weft projector`: the snapshot projector with the read
// API and the UI (docs/read-api.md). Any number may run.
func runProjector(ctx context.Context, env *environment, args []string) error {
	f := newFlags("projector", env)
	urls := backendFlags(f)
	addr := f.string("addr", "WEFT_PROJECTOR_ADDR", "HTTP listen address of the read API and UI (empty: :8081)")
	gatewayURL := f.string("gateway-url", "WEFT_GATEWAY_URL", "the gateway's URL, where the UI's signals go")
	loadKeys := keyFlags(f)
	var cfg projector.Config
	f.DurationVar(&cfg.LagAlert, "lag-alert", 0, "lag above which PROJECTOR_LAG_HIGH is raised (0: 5s; env WEFT_PROJECTOR_LAG_ALERT)")
	f.fromEnv("lag-alert", "WEFT_PROJECTOR_LAG_ALERT")
	f.DurationVar(&cfg.ResyncLag, "resync-lag", 0, "lag above which a run resyncs from the log (0: 10s; env WEFT_PROJECTOR_RESYNC_LAG)")
	f.fromEnv("resync-lag", "WEFT_PROJECTOR_RESYNC_LAG")
	f.DurationVar(&cfg.MaxWait, "max-wait", 0, "longest long poll (0: 60s; env WEFT_PROJECTOR_MAX_WAIT)")
	f.fromEnv("max-wait", "WEFT_PROJECTOR_MAX_WAIT")
	concurrency := f.int("concurrency", "WEFT_PROJECTOR_CONCURRENCY", 0, "batches applied in parallel (0: 4)")
	if err := f.parse(args); err != nil {
		return err
	}
	keys, err := loadKeys()
	if err != nil {
		return err
	}
	pool, nc, closeAll, err := urls.open(ctx, "weft-projector", true)
	if err != nil {
		return err
	}
	defer closeAll()
	cfg.Addr, cfg.GatewayURL, cfg.Keys, cfg.Concurrency = *addr, *gatewayURL, keys, *concurrency
	p, err := newProjector(pool, nc, cfg, env.logger)
	if err != nil {
		return err
	}
	return runUntilDone(ctx, env.logger, "projector", p.Run)
}

// newProjector builds a projector that serves its metrics at /metrics.
func newProjector(pool *pgxpool.Pool, nc *nats.Conn, cfg projector.Config, logger *slog.Logger) (*projector.Service, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	mp, handler, err := metrics.New()
	if err != nil {
		return nil, err
	}
	cfg.Metrics = handler
	return projector.New(pool, js, cfg, mp, logger)
}

// startDevProjector starts the dev stack's projector on cfg.uiAddr with
// the dev keys, forwarding the UI's signals to gatewayURL. It returns the
// UI's URL.
func startDevProjector(ctx context.Context, logger *slog.Logger, pool *pgxpool.Pool, nc *nats.Conn, cfg devConfig,
	keys *auth.Keys, gatewayURL string) (string, func(context.Context) error, error) {
	p, err := newProjector(pool, nc, projector.Config{Keys: keys, GatewayURL: gatewayURL}, logger)
	if err != nil {
		return "", nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.uiAddr)
	if err != nil {
		return "", nil, fmt.Errorf("UI address %s is taken: stop what uses it or pass --ui-addr / WEFT_DEV_UI_ADDR: %w", cfg.uiAddr, err)
	}
	stop := background(ctx, func(ctx context.Context) error { return p.Serve(ctx, ln) })
	return "http://" + ln.Addr().String(), stop, nil
}
