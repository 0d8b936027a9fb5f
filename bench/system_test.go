package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/weftest"
)

// The headline load: what BenchmarkSystem starts.
const (
	// systemRuns is how many runs the closed loop starts.
	systemRuns = 3000
	// systemClients is how many HTTP clients start them, each waiting for
	// its answer before the next start.
	systemClients = 32
	// openLoopFor is how long each open-loop rate is offered.
	openLoopFor = 10 * time.Second
	// openLoopInFlight bounds the starts an open loop has waiting for their
	// answer; a start beyond it waits, and the offered rate is not met.
	openLoopInFlight = 1024
)

// openLoopRates are the fixed start rates of the open loop, runs/s.
var openLoopRates = []int{100, 200, 300, 500}

// benchPlan is a plan the system benchmarks start runs of: carried in
// every start, or, with ref set, registered and named by ref.
type benchPlan struct {
	id  string
	doc json.RawMessage
	ref *api.PlanRef
	// labels are the labels every start carries; nil for none.
	labels map[string]string
}

// systemPlan is three echo steps in a line, data flowing through them: the
// first echoes the run's input, each next one the previous one's output,
// and the run's output is the last one's.
var systemPlan = benchPlan{id: "system3", doc: json.RawMessage(`{"planId":"system3","planVersion":"1","steps":[
	{"id":"a","activity":"echo","input":{"order":"${{ input }}"}},
	{"id":"b","activity":"echo","dependsOn":["a"],"input":{"from_a":"${{ steps.a.output }}"}},
	{"id":"c","activity":"echo","dependsOn":["b"],"input":{"from_b":"${{ steps.b.output }}"}}],
	"output":"${{ steps.c.output }}"}`)}

// BenchmarkSystem is the headline figure: the whole system as a user runs
// it. `weft dev` runs in a process of its own, every service on its
// embedded defaults (gateway, relay, engine, worker with the echo
// activity, projector with the read API, embedded NATS), on a database of
// the shared Postgres; runs of systemPlan are started through the
// gateway's HTTP API with the Go client, while a UI-like poller reads the
// run list from the read API every second. Completion and latency are read
// back from the log: p50/p99 are RunApproved to RunCompleted (both
// persistedAt). Before the load it measures the same server's insert
// ceiling (8 connections, plain single-row INSERT commits), and reports
// each rate as a share of it (ceiling_%; the target, 1,000 runs/s on a
// 12,000 commits/s host's two cores, is 0.12 runs per commit, 12 %).
//
//   - closed: systemClients clients start systemRuns runs as fast as the
//     gateway answers; runs/s is from the first start to the last
//     completion. Projection lag (p99, interpolated in the projector's
//     weft_projector_lag_seconds buckets over the load, and the share
//     within 1 s, exact) is this one's.
//   - open=R: R runs/s are started at a fixed pace for openLoopFor,
//     whatever the answers' pace (open loop: a slow answer does not slow
//     the next start); the latency is what a user offering R runs/s sees.
//
// Each load also reports cpu_ms/run: the whole machine's CPU from its
// first start to its last run's end, less this load generator's, per run
// (whatever else the machine ran included).
func BenchmarkSystem(b *testing.B) {
	systemLoads(b, startDevStack(b, nil))
}

// systemLoads measures s's insert ceiling, then runs and reports
// BenchmarkSystem's loads on s, as sub-benchmarks closed and open=R.
func systemLoads(b *testing.B, s *devStack) {
	ceiling := insertCeiling(b, s.db, 3*time.Second)
	stopPoller := s.pollLikeTheUI()
	defer stopPoller()
	b.Run("closed", func(b *testing.B) {
		for range b.N {
			lagBefore := s.lagHistogram(b)
			cpu := machineCPU(b)
			load := s.closedLoop(b, systemPlan, systemRuns, systemClients)
			b.ReportMetric(ms(machineCPU(b)-cpu)/float64(len(load.runIDs)), "cpu_ms/run")
			load.report(b, s, ceiling)
			lag := s.lagHistogram(b).minus(lagBefore)
			b.ReportMetric(lag.percentile(0.99)*1000, "lag_p99_ms")
			b.ReportMetric(100*lag.shareAtMost(1), "lag_le_1s_%")
		}
	})
	for _, rate := range openLoopRates {
		b.Run(fmt.Sprintf("open=%d", rate), func(b *testing.B) {
			for range b.N {
				cpu := machineCPU(b)
				load := s.openLoop(b, systemPlan, rate, openLoopFor)
				b.ReportMetric(ms(machineCPU(b)-cpu)/float64(len(load.runIDs)), "cpu_ms/run")
				load.report(b, s, ceiling)
			}
		})
	}
}

// systemLoad is one load's runs and clock.
type systemLoad struct {
	runIDs []string
	start  time.Time
	// startP99 is the p99 of the gateway's answer to a start, client side.
	startP99 time.Duration
	// offered is the rate the starts were sent at (runs/s).
	offered float64
}

// closedLoop starts n runs of p from clients clients, each waiting for
// its answer, and waits until every run has ended.
func (s *devStack) closedLoop(b *testing.B, p benchPlan, n, clients int) systemLoad {
	l := s.closedStarts(b, p, n, clients)
	if err := s.waitEnded(context.Background(), l.start, n, 5*time.Minute); err != nil {
		b.Fatal(err)
	}
	return l
}

// closedStarts starts n runs of p from clients clients, each waiting for
// its answer, and returns once every start is answered: the runs may not
// have ended yet.
func (s *devStack) closedStarts(b *testing.B, p benchPlan, n, clients int) systemLoad {
	ctx := context.Background()
	ids := make([]string, n)
	var answers latencies
	start := time.Now()
	parallel(b, clients, n, func(_, i int) error {
		t := time.Now()
		id, err := s.startRun(ctx, p, i)
		answers.add(time.Since(t))
		ids[i] = id
		return err
	})
	offered := float64(n) / time.Since(start).Seconds()
	return systemLoad{runIDs: ids, start: start, startP99: answers.percentile(0.99), offered: offered}
}

// openLoop starts rate runs of p a second for d, each at its own time
// whatever the answers to the earlier ones, and waits until every run has
// ended.
func (s *devStack) openLoop(b *testing.B, p benchPlan, rate int, d time.Duration) systemLoad {
	ctx := context.Background()
	n := rate * int(d/time.Second)
	ids := make([]string, n)
	var (
		answers  latencies
		wg       sync.WaitGroup
		failed   atomic.Pointer[error]
		inFlight = make(chan struct{}, openLoopInFlight)
	)
	start := time.Now()
	for i := range n {
		if failed.Load() != nil {
			break
		}
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		inFlight <- struct{}{}
		wg.Go(func() {
			defer func() { <-inFlight }()
			t := time.Now()
			id, err := s.startRun(ctx, p, i)
			answers.add(time.Since(t))
			ids[i] = id
			if err != nil {
				failed.Store(&err)
			}
		})
	}
	offered := float64(n) / time.Since(start).Seconds()
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	if err := s.waitEnded(ctx, start, n, 5*time.Minute); err != nil {
		b.Fatal(err)
	}
	return systemLoad{runIDs: ids, start: start, startP99: answers.percentile(0.99), offered: offered}
}

// startRun starts a run of p with the i-th input and returns its id.
func (s *devStack) startRun(ctx context.Context, p benchPlan, i int) (string, error) {
	req := api.StartRunRequest{
		TenantID: "default", ProjectID: "bench", EnvironmentID: "bench",
		PlanID: p.id, PlanVersion: "1", Plan: p.doc, Labels: p.labels,
		Input: json.RawMessage(fmt.Sprintf(`{"n":%d,"sku":"sku-%d"}`, i, i%100)),
	}
	if p.ref != nil {
		req.PlanID, req.PlanVersion, req.Plan, req.PlanRef = "", "", nil, p.ref
	}
	res, err := s.client.StartRun(ctx, req)
	if err != nil {
		return "", err
	}
	return res.RunID, nil
}

// report reads the load's runs back from the log and reports runs/s (from
// the first start to the last RunCompleted), the approval-to-completion
// percentiles, the offered rate, the gateway's answer p99, and runs/s as a
// share of ceiling; it returns the runs/s.
func (l systemLoad) report(b *testing.B, s *devStack, ceiling float64) float64 {
	rate := l.rate(b, s)
	var p50, p99 float64
	err := s.db.Pool.QueryRow(context.Background(), `/* bench */
		SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)
		FROM (SELECT extract(epoch FROM c.persisted_at - a.persisted_at) * 1000 AS ms
		      FROM run_events a JOIN run_events c ON c.run_id = a.run_id
		      WHERE a.run_id = ANY($1::uuid[]) AND a.event_type = 'RunApproved' AND c.event_type = 'RunCompleted') d`,
		l.runIDs).Scan(&p50, &p99)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(rate, "runs/s")
	b.ReportMetric(p50, "p50_ms")
	b.ReportMetric(p99, "p99_ms")
	b.ReportMetric(l.offered, "offered/s")
	b.ReportMetric(float64(l.startP99.Microseconds())/1000, "start_p99_ms")
	b.ReportMetric(ceiling, "ceiling_commits/s")
	b.ReportMetric(100*rate/ceiling, "ceiling_%")
	b.ReportMetric(0, "ns/op")
	return rate
}

// rate is the load's runs/s, from its first start to its last
// RunCompleted; it fails b unless every run completed.
func (l systemLoad) rate(b *testing.B, s *devStack) float64 {
	var completed int
	var last time.Time
	err := s.db.Pool.QueryRow(context.Background(), `/* bench */ SELECT count(*), max(persisted_at) FROM run_events
		WHERE run_id = ANY($1::uuid[]) AND event_type = 'RunCompleted'`, l.runIDs).Scan(&completed, &last)
	if err != nil {
		b.Fatal(err)
	}
	if completed != len(l.runIDs) {
		b.Fatalf("%d of %d runs completed", completed, len(l.runIDs))
	}
	return float64(completed) / last.Sub(l.start).Seconds()
}

// pollLikeTheUI reads the first page of the run list from the read API
// every second, as an open UI does, until the returned stop is called.
func (s *devStack) pollLikeTheUI() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_, _ = s.client.ListRuns(ctx, client.RunFilter{Limit: 50})
			}
		}
	}()
	return func() { cancel(); <-done }
}

// insertCeiling measures the server's plain single-row INSERT commits per
// second from 8 connections for d, in a table of its own in db.
func insertCeiling(b *testing.B, db *weftest.DB, d time.Duration) float64 {
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, "CREATE TABLE bench_ceiling (id bigserial PRIMARY KEY, payload text NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	var commits atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if _, err := db.Pool.Exec(ctx, "INSERT INTO bench_ceiling (payload) VALUES ('x')"); err != nil {
					b.Error(err)
					return
				}
				commits.Add(1)
			}
		})
	}
	wg.Wait()
	rate := float64(commits.Load()) / time.Since(start).Seconds()
	if _, err := db.Pool.Exec(ctx, "DROP TABLE bench_ceiling"); err != nil {
		b.Fatal(err)
	}
	return rate
}
