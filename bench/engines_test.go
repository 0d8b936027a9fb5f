package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/engine"
)

// BenchmarkEngines is the live linear3 load of BenchmarkEndToEnd with one
// engine and with three, in one process on the same cores (issue #21: the
// partitioned engines divide the runs without losing throughput), and the
// compare-and-swap conflicts the engines' rounds absorbed. Three engines
// on two cores cannot be faster than one; the figure says what dividing
// costs.
func BenchmarkEngines(b *testing.B) {
	p, err := plan.Parse([]byte(linear3Plan), plan.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("engines=%d", n), func(b *testing.B) {
			mp, h, err := metrics.New()
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				load := runE2ELoadOn(b, p, false, n, telemetry{meters: mp}, nil)
				reportE2E(b, load.db, load.elapsed, true)
			}
			conflicts, _ := metricstest.Get(b, h).Sum("weft_engine_round_conflicts_total", nil)
			b.ReportMetric(conflicts/float64(b.N), "conflicts")
		})
	}
}

// startBenchEngine starts an engine and waits until it consumes its
// partitions; it is stopped when b ends.
func startBenchEngine(b *testing.B, db *weftest.DB, nats *weftest.NATS, tel telemetry) {
	eng, err := engine.New(db.Pool, nats.Conn(b), engine.Config{MeterProvider: tel.meters, TracerProvider: tel.tracer})
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	// A started engine consumes its partitions; the figures start then.
	select {
	case <-eng.Started():
	case err := <-done:
		b.Fatalf("the engine did not start: %v", err)
	}
	b.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
}

// waitMembers waits until n engines are members, then for a heartbeat
// interval and a margin (engine.DefaultPartitionLease/5 and as much
// again), by which each has taken its share.
func waitMembers(b *testing.B, db *weftest.DB, n int) {
	deadline := time.Now().Add(time.Minute)
	for {
		var members int
		err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM engine_members
			WHERE heartbeat_at >= now() - $1::interval`, engine.DefaultPartitionLease).Scan(&members)
		if err != nil {
			b.Fatal(err)
		}
		if members == n {
			time.Sleep(2 * engine.DefaultPartitionLease / 5)
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d engines are members after a minute", members, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
