package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// startServices starts, on the dev stack's Postgres pool and NATS
// connection, every service that exists so far: the outbox relay, then the
// demo run when cfg.demo is set. It returns the stop functions of what it
// started, in start order, also on error.
func startServices(ctx context.Context, env *environment, pool *pgxpool.Pool, nc *nats.Conn, cfg devConfig) ([]func(context.Context) error, error) {
	var stops []func(context.Context) error
	stopRelay, err := startRelay(ctx, env.logger, pool, nc)
	if err != nil {
		return stops, err
	}
	stops = append(stops, stopRelay)
	if !cfg.demo {
		return stops, nil
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return stops, fmt.Errorf("jetstream: %w", err)
	}
	if err := demoRun(ctx, env, pool, js); err != nil {
		return stops, err
	}
	return stops, nil
}
