package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// relayWriters is the number of concurrent writers feeding the relay, the
// same as the 8-writer append figure it must keep up with.
const relayWriters = 8

// BenchmarkRelay measures the outbox relay end to end while 8 writers
// append events (one event and its outbox row per transaction, through the
// journal, each writer to runs of its own): events relayed per second, from the first commit
// to the last JetStream ack, and the p50 and p99 delay from a row's insert
// (in its single-statement transaction, so at commit) to its JetStream ack.
// It runs with JetStream's default periodic fsync and with an fsync on
// every write.
func BenchmarkRelay(b *testing.B) {
	for _, mode := range syncModes {
		b.Run("sync="+mode.name, func(b *testing.B) { benchRelay(b, mode.opts) })
	}
}

func benchRelay(b *testing.B, natsOpts []weftest.NATSOption) {
	ctx := context.Background()
	db := weftest.NewDB(b)
	js := weftest.NewNATS(b, natsOpts...).JetStream(b)
	if err := streams.Ensure(ctx, js, streams.Config{MaxBytes: 1 << 30}); err != nil {
		b.Fatal(err)
	}
	var lat latencies
	relay, err := outbox.NewRelay(db.Pool, js, outbox.RelayConfig{
		ObservePublish: func(enqueuedAt, ackedAt time.Time) { lat.add(ackedAt.Sub(enqueuedAt)) },
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := relay.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = relay.Stop(ctx) })

	j := journal.New(eventlog.New(db.Pool))
	runIDs := make([]string, relayWriters*runsPerWriter)
	for i := range runIDs {
		runIDs[i] = events.NewRunID()
	}
	b.ResetTimer()
	start := time.Now()
	parallel(b, relayWriters, b.N, func(w, i int) error {
		ev, err := events.New(events.Spec{
			RunID: runIDs[w*runsPerWriter+i%runsPerWriter], StepID: fmt.Sprintf("s%d", i), LogicalAttemptID: "1",
			Type: events.StepStarted, PlanVersion: "1",
		})
		if err != nil {
			return err
		}
		_, err = eventlogtest.Append(ctx, j, db.Pool, nil, ev)
		return err
	})
	if err := waitSettled(relay, b.N, 2*time.Minute); err != nil {
		b.Fatal(err)
	}
	report(b, b.N, time.Since(start), "events/s", &lat)
	checkStream(b, js, b.N)
}

// waitSettled waits until the relay has settled n rows, or fails after
// timeout.
func waitSettled(r *outbox.Relay, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		s := r.Stats()
		settled := int(s.Published + s.Duplicates)
		if settled >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("relay settled %d of %d rows within %v", settled, n, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

func checkStream(b *testing.B, js jetstream.JetStream, n int) {
	s, err := js.Stream(context.Background(), streams.EventsStream)
	if err != nil {
		b.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if info.State.Msgs != uint64(n) {
		b.Fatalf("stream holds %d messages, want %d", info.State.Msgs, n)
	}
}
