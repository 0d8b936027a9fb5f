package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/weftest"
)

// The sizes of BenchmarkSystemKeys, each set by an environment variable.
const (
	keysHeldEnv     = "WEFT_BENCH_KEYS_HELD"     // runs parked, each holding a key of its own
	keysQueuedEnv   = "WEFT_BENCH_KEYS_QUEUED"   // runs queued behind one key
	keysReleasedEnv = "WEFT_BENCH_KEYS_RELEASED" // runs queued behind the release phase's key
	defaultKeysHeld = 10_000
	defaultQueued   = 50_000
	defaultReleased = 20_000
	// releaseLimit is the release phase's limit: how many of its runs
	// hold the key at once, each ending as soon as it starts.
	releaseLimit = 500
	// idleFor is how long each idle window counts statements: one cycle
	// of the sweep, which re-drives each parked run once per StallAfter
	// (engine.DefaultStallAfter), so that both windows count it once.
	idleFor = 30 * time.Second
)

// engineStallAfter is how long a run is still before weft dev's sweep
// re-drives it (engine.DefaultStallAfter, plus a pass).
const engineStallAfter = 40 * time.Second

// keyedSystemPlan is systemPlan under a concurrency limit of one run per
// key, each run its own key (its input's n).
var keyedSystemPlan = benchPlan{id: "system3-keyed", doc: json.RawMessage(`{"planId":"system3-keyed","planVersion":"1",
	"concurrency":[{"key":"'n' + string(int(input.n))","limit":1}],"steps":[
	{"id":"a","activity":"echo","input":{"order":"${{ input }}"}},
	{"id":"b","activity":"echo","dependsOn":["a"],"input":{"from_a":"${{ steps.a.output }}"}},
	{"id":"c","activity":"echo","dependsOn":["b"],"input":{"from_b":"${{ steps.b.output }}"}}],
	"output":"${{ steps.c.output }}"}`)}

// heldPlan parks on its step w, holding a key of its own (its input's n).
var heldPlan = benchPlan{id: "held", doc: json.RawMessage(`{"planId":"held","planVersion":"1",
	"concurrency":[{"key":"'h' + string(int(input.n))","limit":1}],
	"steps":[{"id":"w","kind":"waitSignal","signal":"go"}]}`)}

// queuedPlan parks on its step w under one key of limit 1: the first run
// holds it, every other one waits.
var queuedPlan = benchPlan{id: "queued", doc: json.RawMessage(`{"planId":"queued","planVersion":"1",
	"concurrency":[{"key":"'q'","limit":1}],
	"steps":[{"id":"w","kind":"waitSignal","signal":"go"}]}`)}

// releasePlan's runs share one key of releaseLimit; a run whose input
// holds parks on its step w, any other ends as soon as it starts.
var releasePlan = benchPlan{id: "release", doc: json.RawMessage(fmt.Sprintf(`{"planId":"release","planVersion":"1",
	"concurrency":[{"key":"'r'","limit":%d}],
	"steps":[{"id":"w","kind":"waitSignal","signal":"go","if":"input.hold"}]}`, releaseLimit))}

// BenchmarkSystemKeys is flow control's cost (issue #41), on the whole
// `weft dev` stack through its public API, on a private Postgres with
// pg_stat_statements (as BenchmarkSystemCost):
//
//   - keyed_share_%: the closed loop's runs/s under a concurrency limit
//     per run (keyed_runs/s: each run its own key, while
//     WEFT_BENCH_KEYS_HELD runs, default 10,000, park holding 10,000
//     other keys) against the same loop without one (plain_runs/s), in
//     two interleaved pairs;
//   - stmts/s_idle and stmts/s_queued: the statements Postgres runs per
//     second with the stack idle (the held runs parked), before any run
//     is queued and then with WEFT_BENCH_KEYS_QUEUED runs (default
//     50,000) queued behind one key;
//   - released_runs/s: how fast a key's queue drains when places free:
//     WEFT_BENCH_KEYS_RELEASED runs (default 20,000) queued behind
//     releaseLimit parked holders, each ending as soon as it starts, from
//     the holders' release to the last one's end; and as a share of the
//     server's ceiling of single-row commits, measured first
//     (released_ceiling_%).
func BenchmarkSystemKeys(b *testing.B) {
	_, db := privateDB(b, "shared_preload_libraries=pg_stat_statements")
	s := startDevStack(b, db)
	ceiling := insertCeiling(b, db, 3*time.Second)
	if _, err := db.Pool.Exec(context.Background(), "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		s.parkRuns(b, heldPlan, envCount(b, keysHeldEnv, defaultKeysHeld))
		parkedAt := time.Now()
		var plain, keyed float64
		for range 2 {
			plain += s.closedLoop(b, systemPlan, systemRuns, systemClients).rate(b, s) / 2
			keyed += s.closedLoop(b, keyedSystemPlan, systemRuns, systemClients).rate(b, s) / 2
		}
		// The sweep re-drives the held runs once they have been still for
		// its StallAfter: both windows count it.
		time.Sleep(time.Until(parkedAt.Add(engineStallAfter)))
		idle := s.idleStatements(b, db)
		s.queue(b, queuedPlan, `{"n":%d}`, 1, envCount(b, keysQueuedEnv, defaultQueued))
		queued := s.idleStatements(b, db)
		released := s.releaseQueue(b, envCount(b, keysReleasedEnv, defaultReleased))
		b.ReportMetric(plain, "plain_runs/s")
		b.ReportMetric(keyed, "keyed_runs/s")
		b.ReportMetric(100*keyed/plain, "keyed_share_%")
		b.ReportMetric(idle, "stmts/s_idle")
		b.ReportMetric(queued, "stmts/s_queued")
		b.ReportMetric(released, "released_runs/s")
		b.ReportMetric(ceiling, "ceiling_commits/s")
		b.ReportMetric(100*released/ceiling, "released_ceiling_%")
		b.ReportMetric(0, "ns/op")
	}
}

// idleStatements waits until the stack is quiet and returns the
// statements Postgres runs per second over idleFor, the benchmark's own
// left out (statementsSinceReset).
func (s *devStack) idleStatements(b *testing.B, db *weftest.DB) float64 {
	ctx := context.Background()
	if err := s.waitQuiet(ctx, 30*time.Minute); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, "/* bench */ SELECT pg_stat_statements_reset()"); err != nil {
		b.Fatal(err)
	}
	time.Sleep(idleFor)
	return statementsSinceReset(b, db, "idle", idleFor.Seconds())
}

// startInput starts a run of p with input.
func (s *devStack) startInput(ctx context.Context, p benchPlan, input string) error {
	_, err := s.client.StartRun(ctx, api.StartRunRequest{
		TenantID: "default", ProjectID: "bench", EnvironmentID: "bench",
		PlanID: p.id, PlanVersion: "1", Plan: p.doc, Input: json.RawMessage(input),
	})
	return err
}

// queue starts holders runs of p, waits until they run, then starts
// queued more, whose input is format with the run's index, and waits
// until they all wait in the key's queue and the stack is quiet.
func (s *devStack) queue(b *testing.B, p benchPlan, format string, holders, queued int) {
	ctx := context.Background()
	start := func(from, n int) {
		parallel(b, systemClients, n, func(_, i int) error { return s.startInput(ctx, p, fmt.Sprintf(format, from+i)) })
	}
	start(0, holders)
	s.waitCount(b, `SELECT count(*) FROM engine_run_keys WHERE slot LIKE '%' || $1 || '%'`, p.id, holders)
	start(holders, queued)
	s.waitCount(b, `SELECT count(*) FROM run_events e JOIN engine_runs r USING (run_id)
		WHERE e.event_type = 'RunQueued' AND r.key_slot LIKE '%' || $1 || '%'`, p.id, queued)
	if err := s.waitQuiet(ctx, 30*time.Minute); err != nil {
		b.Fatal(err)
	}
}

// waitCount waits until query, given arg, counts want.
func (s *devStack) waitCount(b *testing.B, query, arg string, want int) {
	deadline := time.Now().Add(30 * time.Minute)
	for {
		var n int
		if err := s.db.Pool.QueryRow(context.Background(), "/* bench */ "+query, arg).Scan(&n); err != nil {
			b.Fatal(err)
		}
		if n >= want {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d after 30 minutes: %s", n, want, query)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// releaseQueue queues n runs of releasePlan behind releaseLimit parked
// holders, signals the holders, and returns the queued runs ended per
// second, from the first signal to the last one's end.
func (s *devStack) releaseQueue(b *testing.B, n int) float64 {
	ctx := context.Background()
	s.queue(b, releasePlan, `{"hold":true,"n":%d}`, releaseLimit, 0)
	rows, err := s.db.Pool.Query(ctx, `/* bench */ SELECT k.run_id::text FROM engine_run_keys k WHERE k.slot LIKE '%release%'`)
	if err != nil {
		b.Fatal(err)
	}
	var holders []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			b.Fatal(err)
		}
		holders = append(holders, id)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	parallel(b, systemClients, n, func(_, i int) error { return s.startInput(ctx, releasePlan, fmt.Sprintf(`{"hold":false,"n":%d}`, i)) })
	s.waitCount(b, `SELECT count(*) FROM engine_runs WHERE key_slot LIKE '%' || $1 || '%'`, releasePlan.id, n)
	if err := s.waitQuiet(ctx, 30*time.Minute); err != nil {
		b.Fatal(err)
	}
	if _, err := s.db.Pool.Exec(ctx, "/* bench */ SELECT pg_stat_statements_reset()"); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	parallel(b, systemClients, len(holders), func(_, i int) error {
		_, err := s.client.Signal(ctx, holders[i], api.SignalRequest{SignalName: "go", Payload: json.RawMessage(`{}`)})
		return err
	})
	if err := s.waitEnded(ctx, start, n+len(holders), 30*time.Minute); err != nil {
		b.Fatal(err)
	}
	var last time.Time
	if err := s.db.Pool.QueryRow(ctx, `/* bench */ SELECT max(persisted_at) FROM run_events WHERE event_type = 'RunCompleted'`).Scan(&last); err != nil {
		b.Fatal(err)
	}
	statementsSinceReset(b, s.db, "release", float64(n))
	return float64(n) / last.Sub(start).Seconds()
}
