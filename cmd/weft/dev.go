package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/weftrun/weft/internal/natsboot"
	"github.com/weftrun/weft/internal/pgboot"
	"github.com/weftrun/weft/internal/schema"
)

// shutdownTimeout bounds how long Ctrl-C waits for the stack to drain.
const shutdownTimeout = 15 * time.Second

type devConfig struct {
	dir        string
	dbURL      string
	natsPort   int
	syncAlways bool
	demo       bool
	// gatewayAddr is the gateway's listen address; devToken, when set,
	// is the API token instead of the one in <dir>/token.
	gatewayAddr string
	devToken    string
	// uiAddr is the projector's listen address: the read API and the UI.
	uiAddr string
}

func runDev(ctx context.Context, env *environment, args []string) error {
	f := newFlags("dev", env)
	var cfg devConfig
	f.StringVar(&cfg.dir, "dir", ".weft/dev", "folder for the private Postgres and the NATS store (env WEFT_DEV_DIR)")
	f.fromEnv("dir", "WEFT_DEV_DIR")
	cfg.dbURL = *f.string("database-url", "WEFT_DATABASE_URL", "Postgres URL; empty starts a private instance")
	natsPort := f.int("nats-port", "WEFT_DEV_NATS_PORT", 14222, "port of the embedded NATS server")
	syncAlways := f.bool("nats-sync-always", "WEFT_NATS_SYNC_ALWAYS", false, "fsync every JetStream write before acking")
	demo := f.bool("demo", "WEFT_DEV_DEMO", true, "append a demo run and log its events as JetStream delivers them")
	f.StringVar(&cfg.gatewayAddr, "gateway-addr", "127.0.0.1:8080", "listen address of the gateway's HTTP API (env WEFT_DEV_GATEWAY_ADDR)")
	f.fromEnv("gateway-addr", "WEFT_DEV_GATEWAY_ADDR")
	f.StringVar(&cfg.uiAddr, "ui-addr", "127.0.0.1:8081", "listen address of the UI and the read API (env WEFT_DEV_UI_ADDR)")
	f.fromEnv("ui-addr", "WEFT_DEV_UI_ADDR")
	cfg.devToken = env.getenv("WEFT_DEV_TOKEN")
	if err := f.parse(args); err != nil {
		return err
	}
	cfg.natsPort, cfg.syncAlways, cfg.demo = *natsPort, *syncAlways, *demo
	return devStack(ctx, env, cfg)
}

// devStack starts every part in order, waits for ctx, and stops them in
// reverse order within shutdownTimeout.
func devStack(ctx context.Context, env *environment, cfg devConfig) (err error) {
	var stops []func(context.Context) error
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		for i := len(stops) - 1; i >= 0; i-- {
			err = errors.Join(err, stops[i](stopCtx))
		}
	}()
	if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
		return fmt.Errorf("dev folder: %w", err)
	}

	dbURL, stopPG, err := devPostgres(ctx, cfg)
	if err != nil {
		return err
	}
	stops = append(stops, stopPG)
	pool, err := openPool(ctx, dbURL)
	if err != nil {
		return err
	}
	stops = append(stops, func(context.Context) error { pool.Close(); return nil })
	if _, err := schema.Migrate(ctx, pool); err != nil {
		return err
	}

	ns, err := devNATS(ctx, cfg)
	if err != nil {
		return err
	}
	stops = append(stops, func(context.Context) error { ns.Shutdown(); ns.WaitForShutdown(); return nil })
	nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectBufSize(-1))
	if err != nil {
		return fmt.Errorf("connect to embedded nats: %w", err)
	}
	stops = append(stops, func(context.Context) error { return nc.Drain() })

	svcStops, err := startServices(ctx, env, pool, nc, cfg)
	stops = append(stops, svcStops...)
	if err != nil {
		return err
	}
	gw, err := startDevGateway(ctx, env.logger, pool, nc, cfg)
	if err != nil {
		return err
	}
	stops = append(stops, gw.stop)
	uiURL, stopUI, err := startDevProjector(ctx, env.logger, pool, nc, cfg, gw.keys, gw.url)
	if err != nil {
		return err
	}
	stops = append(stops, stopUI)
	_, err = fmt.Fprintf(env.stdout, "\nWeft dev stack is up.\n  UI:       %s/#token=%s\n  API:      %s\n  Read API: %s/v1/runs\n  Token:    %s (in %s)\n  Postgres: %s\n  NATS:     %s\n  Data:     %s\nPress Ctrl-C to stop.\n\n",
		uiURL, gw.token, gw.url, uiURL, gw.token, filepath.Join(cfg.dir, "token"), redact(dbURL), ns.ClientURL(), cfg.dir)
	if err != nil {
		return err
	}
	<-ctx.Done()
	_, err = fmt.Fprintln(env.stdout, "shutting down…")
	return err
}

// devPostgres returns the configured URL, or starts a private instance
// whose data lives in <dir>/pg and survives restarts.
func devPostgres(ctx context.Context, cfg devConfig) (string, func(context.Context) error, error) {
	noop := func(context.Context) error { return nil }
	if cfg.dbURL != "" {
		return cfg.dbURL, noop, nil
	}
	dir, err := filepath.Abs(filepath.Join(cfg.dir, "pg"))
	if err != nil {
		return "", noop, err
	}
	inst, err := pgboot.Start(ctx, pgboot.Config{DataDir: dir})
	if err != nil {
		return "", noop, fmt.Errorf("start a private Postgres (or set WEFT_DATABASE_URL): %w", err)
	}
	return inst.URL(), inst.Stop, nil
}

func devNATS(ctx context.Context, cfg devConfig) (*server.Server, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.natsPort))
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("NATS port %d is taken: stop what uses it or pass --nats-port / WEFT_DEV_NATS_PORT: %w", cfg.natsPort, err)
	}
	if err := l.Close(); err != nil {
		return nil, err
	}
	return natsboot.Start(natsboot.Config{
		StoreDir:   filepath.Join(cfg.dir, "nats"),
		Port:       cfg.natsPort,
		SyncAlways: cfg.syncAlways,
	})
}
