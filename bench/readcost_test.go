package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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

// Issue #36 finding 3's figures: what one tenant's expensive reads cost
// another tenant's list.
const (
	// readCostElements is the forEach step's element count: the most a
	// plan may have (plan.MaxForEachElements).
	readCostElements = plan.MaxForEachElements
	// readCostVictimRuns is how many runs tenant B's list pages over.
	readCostVictimRuns = 20
	// readCostAttackers are the goroutines sharing the attacker's rate.
	readCostAttackers = 4
	// readCostAttackRate is the attacker's requests per second: half the
	// default key rate (keylimit.DefaultRate, 100/s).
	readCostAttackRate = 50
	// readCostVictimRate is tenant B's lists per second, under its own
	// key's rate.
	readCostVictimRate = 50
	// readCostWindow is how long each case measures B's list.
	readCostWindow = 10 * time.Second
)

// Tokens of the read-cost benchmark's keys: a viewer of tenant A (the
// attacker) and a viewer of tenant B.
const (
	readCostAttackerToken = "weft_bench_readcost_attacker"
	readCostVictimToken   = "weft_bench_readcost_victim"
)

// BenchmarkReadCost measures tenant B's GET /v1/runs latency while a
// viewer of tenant A reads a run of A's with a 10,000-element forEach step
// (every child scheduled, started and completed, projected from the bus
// as the projector projects any run) from readCostAttackers goroutines at
// readCostAttackRate requests/s in all, half its key's default rate. B
// lists its readCostVictimRuns runs at readCostVictimRate/s from one
// goroutine for readCostWindow. The projector runs at its defaults (key
// rate 100/s burst 200; after issue #36, a request per 100 steps
// answered, pages of at most 1,000 children) on its own pool, over
// loopback.
//
// Cases (attack=…):
//   - none: B alone.
//   - default: A alternates GET /v1/runs/{id} (the default view) and
//     …/children?limit=10000, the requests of the finding.
//   - all: A alternates GET /v1/runs/{id}?steps=all and a walk of the
//     children in pages of 1,000, the largest view and page it may ask
//     for after issue #36.
//
// The cases run with the projector's snapshot cache (snapcache=on, the
// default) and, for the default attack, without it (snapcache=off,
// Config.SnapshotCacheSteps -1), where every read fetches and decodes the
// whole snapshot whatever view it answers.
//
// Reported: B's p50 and p99 (ms), the share of A's requests refused (429)
// or invalid (400), and the bytes/s A received.
func BenchmarkReadCost(b *testing.B) {
	for _, c := range []struct {
		cache   string
		steps   int
		attacks []string
	}{{"on", 0, []string{"none", "default", "all"}}, {"off", -1, []string{"default"}}} {
		b.Run("snapcache="+c.cache, func(b *testing.B) {
			rc := setupReadCost(b, projector.Config{SnapshotCacheSteps: c.steps})
			for _, attack := range c.attacks {
				b.Run("attack="+attack, func(b *testing.B) {
					for range b.N {
						rc.measure(b, attack)
					}
				})
			}
		})
	}
}

// readCost is the benchmark's projector and its runs.
type readCost struct {
	url   string
	runID string // A's forEach run
}

// setupReadCost starts the relay and a projector of cfg (keys and logger
// set here), and projects A's forEach run and B's runs.
func setupReadCost(b *testing.B, cfg projector.Config) *readCost {
	b.Helper()
	ctx := context.Background()
	db := weftest.NewDB(b)
	nats := weftest.NewNATS(b)
	startE2ERelay(b, db, nats, telemetry{})
	rc := &readCost{url: serveReadCostProjector(b, db, nats, cfg)}
	j := journal.New(eventlog.New(db.Pool))
	approver := runstart.Approver{Journal: j}
	fan, err := plan.Parse([]byte(fmt.Sprintf(`{"planId":"fan","planVersion":"1","steps":[
		{"id":"fan","activity":"noop","forEach":"lists.range(%d)","input":{"i":"${{ item }}"}}]}`, readCostElements)), plan.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	rc.runID, err = approver.Approve(ctx, db.Pool, runstart.Request{TenantID: "acme", Plan: validatedPlan(b, fan)})
	if err != nil {
		b.Fatal(err)
	}
	appendForEach(b, j, db, rc.runID)
	linear, err := plan.Parse([]byte(linear3Plan), plan.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	for range readCostVictimRuns {
		if _, err := approver.Approve(ctx, db.Pool, runstart.Request{TenantID: "beta", Plan: validatedPlan(b, linear)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := waitSnapshotsAtHead(ctx, db, 2*time.Minute); err != nil {
		b.Fatal(err)
	}
	return rc
}

// appendForEach appends the events of runID's forEach step "fan": its
// StepScheduled and each child's StepScheduled, StepStarted and
// StepCompleted, a thousand events a transaction.
func appendForEach(b *testing.B, j *journal.Journal, db *weftest.DB, runID string) {
	b.Helper()
	specs := []events.Spec{{RunID: runID, Type: events.RunStarted, PlanVersion: "1"},
		{RunID: runID, StepID: "fan", LogicalAttemptID: "1", Type: events.StepScheduled, PlanVersion: "1",
			Data: events.StepScheduledData{Activity: "noop", Queue: "default", ForEach: &events.ForEachData{Count: readCostElements, MaxParallel: 10}}}}
	for i := range readCostElements {
		id := events.ChildStepID("fan", i)
		specs = append(specs,
			events.Spec{RunID: runID, StepID: id, LogicalAttemptID: "1", Type: events.StepScheduled, PlanVersion: "1",
				Data: events.StepScheduledData{Activity: "noop", Queue: "default"}},
			events.Spec{RunID: runID, StepID: id, LogicalAttemptID: "1", Type: events.StepStarted, PlanVersion: "1",
				Data: events.StepStartedData{WorkerID: "bench"}},
			events.Spec{RunID: runID, StepID: id, LogicalAttemptID: "1", Type: events.StepCompleted, PlanVersion: "1",
				Data: events.StepCompletedData{Artifacts: []events.ArtifactRef{}}})
	}
	ctx := context.Background()
	for len(specs) > 0 {
		chunk := specs[:min(1000, len(specs))]
		specs = specs[len(chunk):]
		evs := make([]events.Event, len(chunk))
		for i, s := range chunk {
			ev, err := events.New(s)
			if err != nil {
				b.Fatal(err)
			}
			evs[i] = ev
		}
		err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			_, err := eventlogtest.Append(ctx, j, tx, nil, evs...)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// serveReadCostProjector starts a projector of cfg with the attacker's
// and the victim's keys, serving on a loopback port until b ends, and
// returns its base URL.
func serveReadCostProjector(b *testing.B, db *weftest.DB, nats *weftest.NATS, cfg projector.Config) string {
	b.Helper()
	keys, err := auth.NewKeys(
		auth.Key{Name: "attacker", TenantID: "acme", Role: auth.RoleViewer, Hash: auth.HashKey(readCostAttackerToken)},
		auth.Key{Name: "victim", TenantID: "beta", Role: auth.RoleViewer, Hash: auth.HashKey(readCostVictimToken)})
	if err != nil {
		b.Fatal(err)
	}
	cfg.Keys = keys
	return serveProjector(b, db, nats, cfg)
}

// attackStats counts the attacker's answers.
type attackStats struct {
	sent, refused, invalid, bytes atomic.Int64
}

// measure runs one case: the attack (unless "none") beside B's list loop
// for readCostWindow, then reports.
func (rc *readCost) measure(b *testing.B, attack string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readCostWindow)
	defer cancel()
	var st attackStats
	var wg sync.WaitGroup
	if attack != "none" {
		for w := range readCostAttackers {
			wg.Go(func() { rc.attack(ctx, attack, w, &st) })
		}
	}
	var lat latencies
	var failed atomic.Int64
	tick := time.NewTicker(time.Second / readCostVictimRate)
	defer tick.Stop()
	start := time.Now()
	for ctx.Err() == nil {
		select {
		case <-tick.C:
		case <-ctx.Done():
			continue
		}
		t0 := time.Now()
		status, _, err := readCostGet(context.Background(), rc.url+"/v1/runs?limit=50", readCostVictimToken)
		if err != nil || status != http.StatusOK {
			failed.Add(1)
			continue
		}
		lat.add(time.Since(t0))
	}
	elapsed := time.Since(start)
	wg.Wait()
	if failed.Load() > 0 {
		b.Fatalf("%d of tenant B's lists failed", failed.Load())
	}
	b.ReportMetric(float64(lat.percentile(0.50).Microseconds())/1000, "B-p50-ms")
	b.ReportMetric(float64(lat.percentile(0.99).Microseconds())/1000, "B-p99-ms")
	if n := st.sent.Load(); n > 0 {
		b.ReportMetric(100*float64(st.refused.Load())/float64(n), "A-429-%")
		b.ReportMetric(100*float64(st.invalid.Load())/float64(n), "A-400-%")
		b.ReportMetric(float64(st.bytes.Load())/elapsed.Seconds()/1e6, "A-MB/s")
	}
	b.ReportMetric(0, "ns/op")
}

// attack is one attacker goroutine: its share of readCostAttackRate,
// alternating the case's run view and children page.
func (rc *readCost) attack(ctx context.Context, attack string, w int, st *attackStats) {
	view, after := rc.url+"/v1/runs/"+rc.runID, -1
	if attack == "all" {
		view += "?steps=all"
	}
	tick := time.NewTicker(time.Second * readCostAttackers / readCostAttackRate)
	defer tick.Stop()
	for i := w; ; i++ {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
		path := view
		if i%2 == 1 {
			path = rc.url + "/v1/runs/" + rc.runID + "/steps/fan/children?limit=10000"
			if attack == "all" {
				path = fmt.Sprintf("%s/v1/runs/%s/steps/fan/children?limit=1000&afterIndex=%d", rc.url, rc.runID, after)
				if after += 1000; after >= readCostElements-1 {
					after = -1
				}
			}
		}
		status, n, err := readCostGet(ctx, path, readCostAttackerToken)
		if err != nil {
			continue // the window closed mid-request
		}
		st.sent.Add(1)
		st.bytes.Add(n)
		switch status {
		case http.StatusTooManyRequests:
			st.refused.Add(1)
		case http.StatusBadRequest:
			st.invalid.Add(1)
		}
	}
}

// readCostClient keeps a connection per goroutine of the benchmark open.
var readCostClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * readCostAttackers}}

// readCostGet GETs url with token and returns the status and body size.
func readCostGet(ctx context.Context, url, token string) (int, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := readCostClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, n, err
}
