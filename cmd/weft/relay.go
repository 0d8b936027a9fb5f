package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/streams"
)

// relayOptions are the flags of `weft relay`.
type relayOptions struct {
	urls      backendURLs
	streams   *streamOptions
	ops       *string
	idleGrace *time.Duration
}

// relayFlags defines the flags of `weft relay`; docs/configuration.md
// is generated from them (configdoc_test.go).
func relayFlags(env *environment) (*flags, relayOptions) {
	f := newFlags("relay", env)
	return f, relayOptions{
		urls:    backendFlags(f),
		streams: streamFlags(f),
		ops:     opsFlag(f, "WEFT_RELAY_OPS_ADDR", relayOpsAddr),
		idleGrace: f.duration("idle-grace", "WEFT_RELAY_IDLE_GRACE", 0,
			"how long the relay waits after a claim that found few rows before it claims again, so rows written "+
				"meanwhile share a claim; each row waits at most this long (0: 5ms, negative: off, at most 100ms)"),
	}
}

// runRelay is `weft relay`: the outbox relay as a process of its own. Any
// number may run against one database; each outbox partition is served by
// one of them at a time (docs/outbox.md).
func runRelay(ctx context.Context, env *environment, args []string) error {
	f, opt := relayFlags(env)
	if err := f.parse(args); err != nil {
		return err
	}
	if err := (outbox.RelayConfig{IdleGrace: *opt.idleGrace}).Validate(); err != nil {
		return fmt.Errorf("weft relay --idle-grace: %w", err)
	}
	o, err := newOps(ctx, env, "weft-relay", *opt.ops, opsHint(f))
	if err != nil {
		return err
	}
	b, err := opt.urls.open(ctx, "relay")
	if err != nil {
		return err
	}
	defer b.close()
	uses := []string{streams.EventsStream, streams.TasksStream} // what the outbox holds
	return withOps(ctx, env, o, b.checks(uses...), func(ctx context.Context) error {
		if err := b.streams(ctx, opt.streams, env.logger, uses...); err != nil {
			return err
		}
		stop, err := startRelay(ctx, b.pool, b.nc, outbox.RelayConfig{Logger: env.logger, MeterProvider: o.meters,
			TracerProvider: o.tracer, IdleGrace: *opt.idleGrace})
		if err != nil {
			return err
		}
		env.logger.InfoContext(ctx, "outbox relay running", "nats", redactNATS(*opt.urls.nats))
		<-ctx.Done()
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		return stop(stopCtx)
	})
}

// startRelay starts an outbox relay with cfg on nc; Weft's streams must
// exist. The returned function stops the relay, draining its batches until
// ctx ends.
func startRelay(ctx context.Context, pool *pgxpool.Pool, nc *nats.Conn, cfg outbox.RelayConfig) (func(context.Context) error, error) {
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(outbox.DefaultAckTimeout))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	relay, err := outbox.NewRelay(pool, js, cfg)
	if err != nil {
		return nil, err
	}
	if err := relay.Start(ctx); err != nil {
		return nil, err
	}
	return relay.Stop, nil
}
