package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/streams"
)

// runRelay is `weft relay`: the outbox relay as a process of its own. Any
// number may run against one database; each outbox partition is served by
// one of them at a time (docs/outbox.md).
func runRelay(ctx context.Context, env *environment, args []string) error {
	f := newFlags("relay", env)
	urls := backendFlags(f)
	if err := f.parse(args); err != nil {
		return err
	}
	pool, nc, closeAll, err := urls.open(ctx, "weft-relay", false)
	if err != nil {
		return err
	}
	defer closeAll()
	stop, err := startRelay(ctx, env.logger, pool, nc)
	if err != nil {
		return err
	}
	env.logger.InfoContext(ctx, "outbox relay running", "nats", *urls.nats)
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	return stop(stopCtx)
}

// connectNATS dials a connection that reconnects forever and buffers no
// publish while disconnected, as the outbox relay requires. An empty url
// is an error that says how to set one.
func connectNATS(url, name string) (*nats.Conn, error) {
	if url == "" {
		return nil, errors.New("no NATS server: set WEFT_NATS_URL or --nats-url")
	}
	nc, err := nats.Connect(url,
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.ReconnectBufSize(-1),
	)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", url, err)
	}
	return nc, nil
}

// connectStreams dials NATS as connectNATS does and makes sure Weft's
// streams exist, for a service that consumes them.
func connectStreams(ctx context.Context, url, name string) (*nats.Conn, error) {
	nc, err := connectNATS(url, name)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err == nil {
		err = streams.Ensure(ctx, js, streams.Config{})
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, nil
}

// startRelay ensures Weft's streams exist and starts an outbox relay on nc.
// The returned function stops the relay, draining its batches until ctx
// ends.
func startRelay(ctx context.Context, logger *slog.Logger, pool *pgxpool.Pool, nc *nats.Conn) (func(context.Context) error, error) {
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(outbox.DefaultAckTimeout))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	if err := streams.Ensure(ctx, js, streams.Config{}); err != nil {
		return nil, err
	}
	relay, err := outbox.NewRelay(pool, js, outbox.RelayConfig{}, logger)
	if err != nil {
		return nil, err
	}
	if err := relay.Start(ctx); err != nil {
		return nil, err
	}
	return relay.Stop, nil
}
