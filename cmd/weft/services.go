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
	stops = append(stops, backgroundAs(ctx, "engine", eng.Run))
	w, err := activityworker.New(nc, activityworker.Config{Logger: env.logger, MeterProvider: o.meters, TracerProvider: o.tracer})
	if err != nil {
		return stops, err
	}
	stops = append(stops, backgroundAs(ctx, "worker", w.Run))
	stops = append(stops, backgroundAs(ctx, "maintain", maintainEvery(pool, env, cfg.runRetention, time.Hour)))
	if !cfg.demo {
		return stops, nil
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return stops, fmt.Errorf("jetstream: %w", err)
	}
	return stops, demoRun(ctx, env, pool, js)
}

// background runs a service's Run(ctx) on a goroutine and returns the
// function that stops it: it cancels the service's context and waits for
// Run to return, or for the stop's own context to end. A Run that returns
// context.Canceled once stopped (a service still starting when Ctrl-C
// came) has stopped cleanly: the stop returns nil.
func background(ctx context.Context, run func(context.Context) error) func(context.Context) error {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- run(runCtx) }()
	return func(stopCtx context.Context) error {
		cancel()
		select {
		case err := <-done:
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		case <-stopCtx.Done():
			return fmt.Errorf("service did not stop in time: %w", stopCtx.Err())
		}
	}
}

// asService calls start with the Go profiler label service=name on this
// goroutine, so that every goroutine start starts carries the label: a
// CPU profile of `weft dev` (WEFT_PPROF) splits by service.
func asService(ctx context.Context, name string, start func(context.Context) error) error {
	var err error
	pprof.Do(ctx, pprof.Labels("service", name), func(ctx context.Context) { err = start(ctx) })
	return err
}

// backgroundAs is background with run's goroutines labelled name
// (asService).
func backgroundAs(ctx context.Context, name string, run func(context.Context) error) (stop func(context.Context) error) {
	_ = asService(ctx, name, func(ctx context.Context) error {
		stop = background(ctx, run)
		return nil
	})
	return stop
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
