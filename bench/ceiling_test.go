package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// BenchmarkCeilingInsertCommits is the machine's raw ceiling for durable
// writes: plain single-row INSERT commits per second from 8 connections.
func BenchmarkCeilingInsertCommits(b *testing.B) {
	ctx := context.Background()
	db := weftest.NewDB(b)
	_, err := db.Pool.Exec(ctx, "CREATE TABLE bench_raw (id bigserial PRIMARY KEY, payload text NOT NULL)")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	elapsed := parallel(b, 8, b.N, func(_, i int) error {
		_, err := db.Pool.Exec(ctx, "INSERT INTO bench_raw (payload) VALUES ($1)", fmt.Sprint(i))
		return err
	})
	report(b, b.N, elapsed, "commits/s", nil)
}

// BenchmarkCeilingJetStreamPublish is the raw ceiling of the bus: async
// JetStream publishes per second of 1 KB messages, with JetStream's default
// periodic fsync and with an fsync on every write.
func BenchmarkCeilingJetStreamPublish(b *testing.B) {
	for _, mode := range syncModes {
		b.Run("sync="+mode.name, func(b *testing.B) {
			ctx := context.Background()
			js := weftest.NewNATS(b, mode.opts...).JetStream(b)
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{
				Name: "CEILING", Subjects: []string{"ceiling.>"}, Storage: jetstream.FileStorage,
			})
			if err != nil {
				b.Fatal(err)
			}
			payload := make([]byte, 1024)
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				if _, err := js.PublishAsync(fmt.Sprintf("ceiling.%d", i%64), payload, jetstream.WithStallWait(time.Minute)); err != nil {
					b.Fatal(err)
				}
			}
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				b.Fatal("publishes not acked within a minute")
			}
			report(b, b.N, time.Since(start), "msgs/s", nil)
		})
	}
}

var syncModes = []struct {
	name string
	opts []weftest.NATSOption
}{
	{"default", nil},
	{"always", []weftest.NATSOption{weftest.WithSyncAlways()}},
}
