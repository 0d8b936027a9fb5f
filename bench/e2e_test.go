package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/pkg/worker"
)

// e2eRuns is how many runs each end-to-end figure submits at once.
const e2eRuns = 1000

// BenchmarkEndToEnd runs the whole system in one process (outbox relay,
// engine, a worker with a no-op activity, embedded JetStream) against
// Postgres and 1,000 runs, in two modes:
//
//   - live: 8 writers approve the runs while the engine runs; the clock
//     runs from the first approval to the last completion, and p50/p99 are
//     from RunApproved to RunCompleted (both persistedAt, on the database
//     clock). submit_s is how long the approvals took.
//   - backlog: the runs are approved (and relayed) first, then the engine
//     and the worker start; the clock runs from their start to the last
//     completion: the engine's own rate, with the queue full.
func BenchmarkEndToEnd(b *testing.B) {
	plans := map[string]string{
		"linear3":     linear3Plan,
		"linear3expr": linear3ExprPlan,
		"fanout10":    fanoutPlan(10),
	}
	for _, mode := range []string{"live", "backlog"} {
		for _, name := range []string{"linear3", "linear3expr", "fanout10"} {
			b.Run("mode="+mode+"/plan="+name, func(b *testing.B) {
				p, err := plan.Parse([]byte(plans[name]), plan.Limits{})
				if err != nil {
					b.Fatal(err)
				}
				for range b.N {
					benchE2E(b, p, mode == "backlog")
				}
			})
		}
	}
}

// linear3Plan is three no-op steps in a line.
const linear3Plan = `{"planId":"linear3","planVersion":"1","steps":[
	{"id":"a","activity":"noop"},{"id":"b","activity":"noop","dependsOn":["a"]},
	{"id":"c","activity":"noop","dependsOn":["b"]}]}`

// linear3ExprPlan is linear3 with expressions in every step's input (issue
// #18: their cost, set against linear3's in the same run).
const linear3ExprPlan = `{"planId":"linear3expr","planVersion":"1","steps":[
	{"id":"a","activity":"noop","input":{"run":"${{ run.id }}","n":"${{ 1 + 2 }}"}},
	{"id":"b","activity":"noop","dependsOn":["a"],"input":{"prev":"${{ steps.a.status }}","out":"${{ steps.a.output }}"}},
	{"id":"c","activity":"noop","dependsOn":["b"],"input":{"line":"after ${{ steps.b.status }} in ${{ run.planId }}"}}]}`

// fanoutPlan is a root, n parallel steps after it, and a join.
func fanoutPlan(n int) string {
	steps := []string{`{"id":"root","activity":"noop"}`}
	deps := make([]string, n)
	for i := range n {
		steps = append(steps, fmt.Sprintf(`{"id":"s%d","activity":"noop","dependsOn":["root"]}`, i))
		deps[i] = fmt.Sprintf(`"s%d"`, i)
	}
	steps = append(steps, `{"id":"join","activity":"noop","dependsOn":[`+strings.Join(deps, ",")+`]}`)
	return `{"planId":"fanout","planVersion":"1","steps":[` + strings.Join(steps, ",") + `]}`
}

func benchE2E(b *testing.B, p *plan.Plan, backlog bool) {
	load := runE2ELoad(b, p, backlog, telemetry{}, nil)
	reportE2E(b, load.db, load.elapsed, !backlog)
	if !backlog {
		b.ReportMetric(load.submitted.Seconds(), "submit_s")
	}
}

// e2eLoad is what runE2ELoad ran: its database and bus, and its clock.
type e2eLoad struct {
	db   *weftest.DB
	nats *weftest.NATS
	// elapsed is the figure's clock (see BenchmarkEndToEnd); submitted is
	// how long the approvals took.
	elapsed, submitted time.Duration
}

// validatedPlan is p validated for the approvals of its runs, once,
// before the timer starts.
func validatedPlan(b *testing.B, p *plan.Plan) plan.Validated {
	b.Helper()
	v, err := p.Validated(plan.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// runE2ELoad is one end-to-end load of e2eRuns runs of p, in live or
// backlog mode (see BenchmarkEndToEnd), over a fresh database and bus. The
// benchmark timer runs from the first approval to the last completion (it
// is stopped and started, never reset, so that b.N > 1 adds up).
// alongside, when not nil, is called once the streams and the relay are up
// and before the engine starts, to start services that run next to the
// load (on the same cores, so they are part of its figures). The relay,
// engine and worker report to tel's providers.
func runE2ELoad(b *testing.B, p *plan.Plan, backlog bool, tel telemetry, alongside func(*weftest.DB, *weftest.NATS)) e2eLoad {
	return runE2ELoadOn(b, p, backlog, 1, tel, alongside)
}

// runE2ELoadOn is runE2ELoad with engines engines in the process, which
// divide the runs' partitions before the clock starts.
func runE2ELoadOn(b *testing.B, p *plan.Plan, backlog bool, engines int, tel telemetry, alongside func(*weftest.DB, *weftest.NATS)) e2eLoad {
	b.StopTimer()
	ctx := context.Background()
	db := weftest.NewDB(b)
	nats := weftest.NewNATS(b)
	startE2ERelay(b, db, nats, tel)
	if alongside != nil {
		alongside(db, nats)
	}
	if !backlog {
		startE2EEngines(b, db, nats, engines, tel)
	}
	approver := runstart.Approver{Journal: journal.New(eventlog.New(db.Pool))}
	v := validatedPlan(b, p)
	b.StartTimer()
	start := time.Now()
	parallel(b, 8, e2eRuns, func(_, _ int) error {
		_, err := approver.Approve(ctx, db.Pool, runstart.Request{Plan: v})
		return err
	})
	submitted := time.Since(start)
	if backlog {
		if err := waitOutboxEmpty(ctx, db, time.Minute); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		startE2EEngines(b, db, nats, engines, tel)
	}
	if err := waitRunsDone(ctx, db, 5*time.Minute); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	return e2eLoad{db: db, nats: nats, elapsed: elapsed, submitted: submitted}
}

// waitOutboxEmpty waits until the relay has published every outbox row.
func waitOutboxEmpty(ctx context.Context, db *weftest.DB, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var left int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&left); err != nil {
			return err
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d outbox rows unpublished after %v", left, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startE2ERelay ensures the streams and starts the outbox relay, stopped
// when b ends.
func startE2ERelay(b *testing.B, db *weftest.DB, nats *weftest.NATS, tel telemetry) {
	ctx := context.Background()
	js := nats.JetStream(b)
	if err := streams.Ensure(ctx, js, streams.Config{MaxBytes: 1 << 30}); err != nil {
		b.Fatal(err)
	}
	relay, err := outbox.NewRelay(db.Pool, nats.JetStream(b), outbox.RelayConfig{MeterProvider: tel.meters, TracerProvider: tel.tracer})
	if err != nil {
		b.Fatal(err)
	}
	if err := relay.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = relay.Stop(ctx) })
}

// startE2EEngine starts an engine and a worker, stopped when b ends.
func startE2EEngine(b *testing.B, db *weftest.DB, nats *weftest.NATS, tel telemetry) {
	startE2EEngines(b, db, nats, 1, tel)
}

// startE2EEngines starts n engines and a worker, stopped when b ends. With
// more than one engine it returns once they have divided the partitions:
// all are members, and a heartbeat later each consumes its share.
func startE2EEngines(b *testing.B, db *weftest.DB, nats *weftest.NATS, n int, tel telemetry) {
	ctx := context.Background()
	for range n {
		startBenchEngine(b, db, nats, tel)
	}
	if n > 1 {
		waitMembers(b, db, n)
	}
	w, err := worker.New(nats.JetStream(b), worker.Config{Concurrency: 64, TracerProvider: tel.tracer})
	if err != nil {
		b.Fatal(err)
	}
	noop := func(context.Context, worker.Input) (worker.Output, error) { return worker.Output{}, nil }
	if err := w.Register("noop", noop); err != nil {
		b.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.Stop(ctx) })
}

// waitRunsDone waits until every run has ended (engine_runs is empty).
func waitRunsDone(ctx context.Context, db *weftest.DB, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var left int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM engine_runs`).Scan(&left); err != nil {
			return err
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d runs unfinished after %v", left, e2eRuns, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// reportE2E reports runs/s, events/s and, when latency is set (live mode),
// the approval-to-completion percentiles, read back from the log. In
// backlog mode the approvals happened before the clock started and are not
// counted in events/s.
func reportE2E(b *testing.B, db *weftest.DB, elapsed time.Duration, latency bool) {
	ctx := context.Background()
	var completed, evs int
	var p50, p99 float64
	err := db.Pool.QueryRow(ctx, `
		WITH d AS (
			SELECT a.run_id, extract(epoch FROM c.persisted_at - a.persisted_at) * 1000 AS ms
			FROM run_events a JOIN run_events c ON c.run_id = a.run_id
			WHERE a.event_type = 'RunApproved' AND c.event_type = 'RunCompleted')
		SELECT count(*), coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), 0),
		       coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms), 0),
		       (SELECT count(*) FROM run_events WHERE $1 OR event_type <> 'RunApproved')
		FROM d`, latency).Scan(&completed, &p50, &p99, &evs)
	if err != nil {
		b.Fatal(err)
	}
	if completed != e2eRuns {
		b.Fatalf("%d of %d runs completed", completed, e2eRuns)
	}
	b.ReportMetric(float64(completed)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(float64(evs)/elapsed.Seconds(), "events/s")
	if latency {
		b.ReportMetric(p50, "p50_ms")
		b.ReportMetric(p99, "p99_ms")
	}
	b.ReportMetric(0, "ns/op")
}
