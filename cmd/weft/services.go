package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/pprof"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/internal/store/retention"
	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/startstop"
	activityworker "github.com/weftrun/weft/services/activity-worker"
	"github.com/weftrun/weft/services/engine"
)

// startServices starts, on the dev stack's Postgres pool and NATS
// connection (Weft's streams must exist), the outbox relay, the engine and
// an activity worker with the demo activities, then the demo run when
// cfg.demo is set. Their metrics and spans go to o's providers. It returns
// the stop functions of what it started, in start order, also on error.
func startServices(ctx context.Context, env *environment, pool *pgxpool.Pool, nc *nats.Conn, cfg devConfig, o *ops) ([]func(context.Context) error, error) {
	var stops []func(context.Context) error
	var stopRelay func(context.Context) error
	err := asService(ctx, "relay", func(ctx context.Context) (err error) {
		stopRelay, err = startRelay(ctx, pool, nc, outbox.RelayConfig{Logger: env.logger, MeterProvider: o.meters, TracerProvider: o.tracer})
		return err
	})
	if err != nil {
		return stops, err
	}
	stops = append(stops, stopRelay)
	engCfg := cfg.engine
	engCfg.Logger, engCfg.MeterProvider, engCfg.TracerProvider = env.logger, o.meters, o.tracer
	eng, err := engine.New(pool, nc, engCfg)
	if err != nil {
		return stops, err
	}
	w, err := activityworker.New(nc, activityworker.Config{Logger: env.logger, MeterProvider: o.meters, TracerProvider: o.tracer})
	if err != nil {
		return stops, err
	}
	for _, part := range []struct {
		name string
		s    startstop.Service
	}{
		{"engine", eng},
		{"worker", &startstop.Loop{Run: w.Run}},
		{"maintain", &startstop.Loop{Run: maintainEvery(pool, env, cfg.runRetention, time.Hour)}},
	} {
		stop, err := startAs(ctx, part.name, part.s)
		if err != nil {
			return stops, err
		}
		stops = append(stops, stop)
	}
	if !cfg.demo {
		return stops, nil
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return stops, fmt.Errorf("jetstream: %w", err)
	}
	return stops, demoRun(ctx, env, pool, js)
}

// asService calls start with the Go profiler label service=name on this
// goroutine, so that every goroutine start starts carries the label: a
// CPU profile of `weft dev` (WEFT_PPROF) splits by service.
func asService(ctx context.Context, name string, start func(context.Context) error) error {
	var err error
	pprof.Do(ctx, pprof.Labels("service", name), func(ctx context.Context) { err = start(ctx) })
	return err
}

// startAs starts s with the Go profiler label service=name (asService)
// and returns its Stop. The end of ctx while s starts (a Ctrl-C while the
// engine waits for its bus) aborts the start; once s runs, ctx's end no
// longer touches it: the dev stack stops each part by its Stop, in order
// (stopAll), so that Ctrl-C is a drain, not a hard stop.
func startAs(ctx context.Context, name string, s startstop.Service) (func(context.Context) error, error) {
	runCtx, hard := context.WithCancel(context.WithoutCancel(ctx))
	abort := context.AfterFunc(ctx, hard)
	if err := asService(runCtx, name, s.Start); err != nil {
		abort()
		hard()
		return nil, err
	}
	if !abort() { // ctx ended as s started: it is stopping at once; wait for it
		hard()
		return nil, errors.Join(ctx.Err(), s.Stop(context.WithoutCancel(ctx)))
	}
	return func(stopCtx context.Context) error {
		defer hard()
		return s.Stop(stopCtx)
	}, nil
}

// maintainEvery is `weft maintain --every every` as a service of the dev
// stack: a stop is not an error.
func maintainEvery(pool *pgxpool.Pool, env *environment, runRetention, every time.Duration) func(context.Context) error {
	k := retention.New(pool, retention.Config{RunRetention: runRetention, Logger: env.logger})
	return func(ctx context.Context) error {
		if err := k.Run(ctx, every); !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
}

// runUntilDone runs a service in the foreground until ctx ends.
func runUntilDone(ctx context.Context, logger *slog.Logger, name string, run func(context.Context) error) error {
	logger.InfoContext(ctx, name+" running")
	if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
