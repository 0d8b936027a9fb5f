package health

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Postgres returns the check named "postgres": a ping over pool.
func Postgres(pool *pgxpool.Pool) Check {
	return Check{Name: "postgres", Run: func(ctx context.Context) error {
		if err := pool.Ping(ctx); err != nil {
			return fmt.Errorf("ping: %w", err)
		}
		return nil
	}}
}

// NATS returns the check named "nats": nc is connected and the server
// answers a round trip.
func NATS(nc *nats.Conn) Check {
	return Check{Name: "nats", Run: func(ctx context.Context) error {
		if s := nc.Status(); s != nats.CONNECTED {
			return fmt.Errorf("connection is %s", s)
		}
		if err := nc.FlushWithContext(ctx); err != nil {
			return fmt.Errorf("round trip: %w", err)
		}
		return nil
	}}
}

// Stream returns the check named "stream <name>": the JetStream stream
// exists. Its info request needs $JS.API.STREAM.INFO.<name>.
func Stream(js jetstream.JetStream, name string) Check {
	return Check{Name: "stream " + name, Run: func(ctx context.Context) error {
		_, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return errors.New("stream not found")
		}
		return err
	}}
}

// Consumer returns the check named "consumer <durable>": the durable
// consumer exists on stream. A consumer deleted under a running service
// fails it until the service creates it again (streams.Keeper). Its info
// request needs $JS.API.CONSUMER.INFO.<stream>.<durable>.
func Consumer(js jetstream.JetStream, stream, durable string) Check {
	return Check{Name: "consumer " + durable, Run: func(ctx context.Context) error {
		_, err := js.Consumer(ctx, stream, durable)
		switch {
		case errors.Is(err, jetstream.ErrConsumerNotFound):
			return fmt.Errorf("consumer not found on stream %s", stream)
		case errors.Is(err, jetstream.ErrStreamNotFound):
			return fmt.Errorf("stream %s not found", stream)
		}
		return err
	}}
}
