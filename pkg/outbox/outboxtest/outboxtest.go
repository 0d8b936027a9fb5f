// Package outboxtest starts an outbox relay for a test: the one setup that
// every test of a service which writes events needs, so that what it
// commits reaches the bus as it does in production.
package outboxtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/outbox"
)

// StartRelay starts a relay of pool's outbox to js with cfg, and stops it
// when the test ends, failing the test if the stop does. The returned
// relay may be stopped earlier (Stop is idempotent).
func StartRelay(t testing.TB, pool *pgxpool.Pool, js jetstream.JetStream, cfg outbox.RelayConfig) *outbox.Relay {
	t.Helper()
	relay, err := outbox.NewRelay(pool, js, cfg)
	if err != nil {
		t.Fatalf("outboxtest: new relay: %v", err)
	}
	if err := relay.Start(context.Background()); err != nil {
		t.Fatalf("outboxtest: start relay: %v", err)
	}
	t.Cleanup(func() {
		if err := relay.Stop(context.Background()); err != nil {
			t.Errorf("outboxtest: stop relay: %v", err)
		}
	})
	return relay
}
