package bench

import (
	"cmp"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/weftest"
)

// forEachElements is how many elements BenchmarkForEach's step loops over.
const forEachElements = 1000

// BenchmarkForEach runs one run whose forEach step loops over 1,000
// elements of a no-op activity (issue #18), through the whole engine: the
// outbox relay, the engine and a worker on embedded JetStream, against
// Postgres. The clock runs from the run's approval to its completion;
// elements/s is 1,000 over that. It is measured at the default
// maxParallel (10) and at 100.
func BenchmarkForEach(b *testing.B) {
	for _, maxParallel := range []int{0, 100} {
		b.Run(fmt.Sprintf("maxParallel=%d", cmp.Or(maxParallel, plan.DefaultMaxParallel)), func(b *testing.B) {
			p, err := plan.Parse([]byte(fmt.Sprintf(`{"planId":"foreach","planVersion":"1","steps":[
				{"id":"fan","activity":"noop","forEach":"lists.range(%d)","maxParallel":%d,"input":{"i":"${{ item }}"}}]}`,
				forEachElements, maxParallel)), plan.Limits{})
			if err != nil {
				b.Fatal(err)
			}
			var total time.Duration
			for range b.N {
				total += benchForEach(b, p)
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "s/run")
			b.ReportMetric(float64(forEachElements*b.N)/total.Seconds(), "elements/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// benchForEach runs one run of p over a fresh database and bus and
// returns how long it took.
func benchForEach(b *testing.B, p *plan.Plan) time.Duration {
	b.StopTimer()
	ctx := context.Background()
	db := weftest.NewDB(b)
	nats := weftest.NewNATS(b)
	startE2ERelay(b, db, nats, telemetry{})
	startE2EEngine(b, db, nats, telemetry{})
	approver := runstart.Approver{Journal: journal.New(eventlog.New(db.Pool))}
	v := validatedPlan(b, p)
	b.StartTimer()
	start := time.Now()
	if _, err := approver.Approve(ctx, db.Pool, runstart.Request{Plan: v}); err != nil {
		b.Fatal(err)
	}
	if err := waitRunsDone(ctx, db, 5*time.Minute); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	var completed int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM run_events WHERE event_type = 'RunCompleted'`).Scan(&completed); err != nil {
		b.Fatal(err)
	}
	if completed != 1 {
		b.Fatal("the forEach run did not complete")
	}
	return elapsed
}
