package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/projector"
)

// Issue #5's figures: how fast the projector drains a backlog, and its
// projection lag while the end-to-end benchmark's full load runs.
const (
	// projectorRuns is how many runs the backlog holds; each is a
	// three-step run of projectorRunEvents events.
	projectorRuns      = 1000
	projectorRunEvents = 12
	// projectorWriters append the backlog, a run per transaction.
	projectorWriters = 8
)

// BenchmarkProjectorThroughput measures events projected per second when
// the projector drains a backlog: 1,000 completed three-step runs (12
// events each: RunApproved, RunStarted, StepScheduled, StepStarted and
// StepCompleted for each step, RunCompleted) are appended through the
// journal and relayed to JetStream with no projector running; then a
// projector (the defaults, its own pool as `weft projector` opens it)
// starts, and the clock runs from its start until every run's snapshot has
// reached its log's head (last_event_seq = run_heads.head_seq), polled
// every 10 ms.
//
// Two backlogs, because the projector takes a different path for each:
//
//   - fresh: events younger than Config.ResyncLag (set to an hour), so
//     every event is applied from its bus message.
//   - old: events older than ResyncLag (set to a millisecond), as after
//     an outage longer than the default 10 s: each run is read back from
//     the Postgres log, by the start's rebuild of runs without a snapshot
//     (docs/read-api.md, "Rebuilding snapshots") or by the resync of its
//     first batch, whichever comes first, and its later bus messages are
//     duplicates.
func BenchmarkProjectorThroughput(b *testing.B) {
	for _, bl := range []struct {
		name      string
		resyncLag time.Duration
	}{{"fresh", time.Hour}, {"old", time.Millisecond}} {
		b.Run("backlog="+bl.name, func(b *testing.B) {
			for range b.N {
				benchProjectorDrain(b, bl.resyncLag)
			}
		})
	}
}

func benchProjectorDrain(b *testing.B, resyncLag time.Duration) {
	b.StopTimer()
	ctx := context.Background()
	db := weftest.NewDB(b)
	nats := weftest.NewNATS(b)
	startE2ERelay(b, db, nats, telemetry{})
	p, err := plan.Parse([]byte(linear3Plan), plan.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	approver := runstart.Approver{Journal: journal.New(eventlog.New(db.Pool))}
	v := validatedPlan(b, p)
	// The timer runs over the backlog's writing too, so that about one
	// iteration fills -benchtime; the figure's own clock starts with the
	// projector.
	b.StartTimer()
	parallel(b, projectorWriters, projectorRuns, func(_, _ int) error {
		return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			runID, err := approver.ApproveTx(ctx, tx, runstart.Request{Plan: v})
			if err != nil {
				return err
			}
			evs, err := completedRun(runID, p)
			if err != nil {
				return err
			}
			_, err = eventlogtest.Append(ctx, approver.Journal, tx, nil, evs...)
			return err
		})
	})
	if err := waitOutboxEmpty(ctx, db, time.Minute); err != nil {
		b.Fatal(err)
	}
	checkStream(b, nats.JetStream(b), projectorRuns*projectorRunEvents)

	start := time.Now()
	m := startProjector(b, db, nats, projector.Config{ResyncLag: resyncLag})
	if err := waitSnapshotsAtHead(ctx, db, time.Minute); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()

	const total = projectorRuns * projectorRunEvents
	// The backlog's label must be the path the projector took: a fresh
	// backlog is applied from the bus, event by event; an old one is read
	// from the log, by the resync of a run whose bus events come late or
	// by the start's rebuild of runs without a snapshot (which counts no
	// applied events).
	fromLog := m.counter(b, "weft.projector.resyncs") + m.counter(b, "weft.projector.rebuilt")
	if fresh := resyncLag >= time.Hour; fresh {
		if err := m.waitApplied(ctx, total, time.Minute); err != nil {
			b.Fatal(err)
		}
		if fromLog != 0 {
			b.Fatalf("a fresh backlog: %d runs read from the log", fromLog)
		}
	} else if fromLog < projectorRuns {
		b.Fatalf("an old backlog: %d runs read from the log, of %d", fromLog, projectorRuns)
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "events/s")
	b.ReportMetric(0, "ns/op")
}

// completedRun returns the events after RunApproved of a run of p that
// completed every step, in order, as the engine and a worker write them.
func completedRun(runID string, p *plan.Plan) ([]events.Event, error) {
	specs := []events.Spec{{RunID: runID, Type: events.RunStarted, PlanVersion: p.PlanVersion}}
	for _, st := range p.Steps {
		for _, s := range []struct {
			typ  events.Type
			data any
		}{
			{events.StepScheduled, events.StepScheduledData{Activity: st.Activity, Queue: "default"}},
			{events.StepStarted, events.StepStartedData{WorkerID: "bench"}},
			{events.StepCompleted, events.StepCompletedData{Artifacts: []events.ArtifactRef{}}},
		} {
			specs = append(specs, events.Spec{RunID: runID, StepID: st.ID, LogicalAttemptID: "1",
				Type: s.typ, PlanVersion: p.PlanVersion, Data: s.data})
		}
	}
	specs = append(specs, events.Spec{RunID: runID, Type: events.RunCompleted, PlanVersion: p.PlanVersion})
	evs := make([]events.Event, len(specs))
	for i, s := range specs {
		ev, err := events.New(s)
		if err != nil {
			return nil, err
		}
		evs[i] = ev
	}
	return evs, nil
}

// BenchmarkProjectorLagUnderEngineLoad measures projection lag while the
// end-to-end benchmark's live linear3 load runs (BenchmarkEndToEnd:
// 1,000 three-step runs approved by 8 writers, the relay, the engine and a
// worker), with a projector (the defaults, its own pool) running from the
// start. runs/s is the load's rate with the projector beside it. After
// the last run completes, the benchmark waits until the projector has
// applied every event of the log, then reads the lags.
//
// Lag is the projector's own weft.projector.lag histogram: per event, from
// its persistedAt (the database clock at its insert) to the projector's
// clock when it applies the event's batch. p50 and p99 interpolate linearly
// inside the histogram's bucket (bounds in seconds: 0.005, 0.01, 0.025,
// 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2, 5, 10, 30, 60), with the lowest and
// highest buckets narrowed to the exact min and max the histogram also
// keeps; lag-max-ms is that exact max. An interpolated percentile is off
// by at most its bucket's width (250 ms between 0.75 s and 1 s, a second
// between 1 s and 2 s); lag-le-1s-% is exact, because 1 s is a bound: the
// share of events projected within the SLA.
func BenchmarkProjectorLagUnderEngineLoad(b *testing.B) {
	p, err := plan.Parse([]byte(linear3Plan), plan.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		var m *projectorMetrics
		load := runE2ELoad(b, p, false, telemetry{}, func(db *weftest.DB, nats *weftest.NATS) {
			m = startProjector(b, db, nats, projector.Config{})
		})
		ctx := context.Background()
		var total int
		if err := load.db.Pool.QueryRow(ctx, `SELECT count(*) FROM run_events`).Scan(&total); err != nil {
			b.Fatal(err)
		}
		if err := m.waitApplied(ctx, total, time.Minute); err != nil {
			b.Fatal(err)
		}
		h := m.lagHistogram(b)
		b.ReportMetric(float64(e2eRuns)/load.elapsed.Seconds(), "runs/s")
		b.ReportMetric(h.percentile(0.50)*1000, "lag-p50-ms")
		b.ReportMetric(h.percentile(0.99)*1000, "lag-p99-ms")
		b.ReportMetric(h.max*1000, "lag-max-ms")
		b.ReportMetric(100*h.shareAtMost(1), "lag-le-1s-%")
		b.ReportMetric(0, "ns/op")
	}
}

// projectorToken is the API key the benchmarks' projectors are configured
// with; nothing reads the API.
const projectorToken = "weft_bench_projector_token"

// startProjector starts a projector with cfg (Keys set here) over its own
// pool of db, serving on a loopback port until b ends, and returns its
// metrics.
func startProjector(b *testing.B, db *weftest.DB, nats *weftest.NATS, cfg projector.Config) *projectorMetrics {
	b.Helper()
	keys, err := auth.NewKeys(auth.Key{Name: "bench", TenantID: "acme", Role: auth.RoleViewer, Hash: auth.HashKey(projectorToken)})
	if err != nil {
		b.Fatal(err)
	}
	cfg.Keys = keys
	m := &projectorMetrics{reader: sdkmetric.NewManualReader()}
	cfg.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(m.reader))
	serveProjector(b, db, nats, cfg)
	return m
}

// serveProjector starts a projector of cfg over its own pool of db (the
// default size, as `weft projector` opens it), logging errors only,
// serving on a loopback port until b ends, and returns its base URL.
func serveProjector(b *testing.B, db *weftest.DB, nats *weftest.NATS, cfg projector.Config) string {
	b.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, db.URL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	proj, err := projector.New(pool, nats.Conn(b), cfg)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- proj.Serve(runCtx, ln) }()
	b.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	return "http://" + ln.Addr().String()
}

// waitSnapshotsAtHead waits until every run's snapshot has reached its
// log's head.
func waitSnapshotsAtHead(ctx context.Context, db *weftest.DB, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var behind int
		err := db.Pool.QueryRow(ctx, `
			SELECT count(*) FROM run_heads h LEFT JOIN run_snapshots s USING (run_id)
			WHERE s.last_event_seq IS DISTINCT FROM h.head_seq`).Scan(&behind)
		if err != nil {
			return err
		}
		if behind == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d runs' snapshots behind their log after %v", behind, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// projectorMetrics reads a projector's OTel metrics.
type projectorMetrics struct {
	reader *sdkmetric.ManualReader
}

func (m *projectorMetrics) collect(ctx context.Context) ([]metricdata.Metrics, error) {
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(ctx, &rm); err != nil {
		return nil, err
	}
	var out []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		out = append(out, sm.Metrics...)
	}
	return out, nil
}

// applied returns weft.projector.events.applied: events applied to
// snapshots, each once.
func (m *projectorMetrics) applied(ctx context.Context) (int64, error) {
	ms, err := m.collect(ctx)
	if err != nil {
		return 0, err
	}
	return sumCounter(ms, "weft.projector.events.applied"), nil
}

// waitApplied waits until the projector has applied, and so recorded the
// lag of, n events.
func (m *projectorMetrics) waitApplied(ctx context.Context, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		got, err := m.applied(ctx)
		if err != nil {
			return err
		}
		if got > int64(n) {
			return fmt.Errorf("projector applied %d events; the log holds %d", got, n)
		}
		if got == int64(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("projector applied %d of %d events within %v", got, n, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// counter returns the named counter's total.
func (m *projectorMetrics) counter(b *testing.B, name string) int64 {
	b.Helper()
	ms, err := m.collect(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return sumCounter(ms, name)
}

func sumCounter(ms []metricdata.Metrics, name string) int64 {
	var n int64
	for _, m := range ms {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
			for _, dp := range sum.DataPoints {
				n += dp.Value
			}
		}
	}
	return n
}

// lagHistogram returns weft.projector.lag, which has one data point.
func (m *projectorMetrics) lagHistogram(b *testing.B) histogram {
	b.Helper()
	ms, err := m.collect(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range ms {
		h, ok := m.Data.(metricdata.Histogram[float64])
		if !ok || m.Name != "weft.projector.lag" {
			continue
		}
		if len(h.DataPoints) != 1 {
			b.Fatalf("weft.projector.lag has %d data points, want 1", len(h.DataPoints))
		}
		dp := h.DataPoints[0]
		lo, okMin := dp.Min.Value()
		hi, okMax := dp.Max.Value()
		if dp.Count == 0 || !okMin || !okMax {
			b.Fatal("weft.projector.lag recorded nothing")
		}
		return histogram{bounds: dp.Bounds, counts: dp.BucketCounts, count: dp.Count, min: lo, max: hi}
	}
	b.Fatal("no weft.projector.lag histogram")
	return histogram{}
}

// histogram is an explicit-bucket histogram: counts[i] holds the values in
// (bounds[i-1], bounds[i]], the last bucket those above the last bound.
type histogram struct {
	bounds   []float64
	counts   []uint64
	count    uint64
	min, max float64
}

// percentile returns the p-quantile, interpolated linearly inside its
// bucket, whose ends are narrowed to the exact min and max.
func (h histogram) percentile(p float64) float64 {
	rank := p * float64(h.count)
	var below float64
	for i, c := range h.counts {
		if c == 0 || below+float64(c) < rank {
			below += float64(c)
			continue
		}
		lo, hi := h.min, h.max
		if i > 0 {
			lo = max(lo, h.bounds[i-1])
		}
		if i < len(h.bounds) {
			hi = min(hi, h.bounds[i])
		}
		return lo + (hi-lo)*(rank-below)/float64(c)
	}
	return h.max
}

// shareAtMost returns the share of values at most bound, which must be one
// of the bounds.
func (h histogram) shareAtMost(bound float64) float64 {
	var n uint64
	for i, ub := range h.bounds {
		if ub > bound {
			break
		}
		n += h.counts[i]
	}
	return float64(n) / float64(h.count)
}
