package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/internal/boot/pgboot"
	"github.com/weftrun/weft/pkg/weftest"
)

// costProfileFor is how long BenchmarkSystemCost profiles weft dev's CPU,
// from the start of each load: shorter than the closed load on any host so
// far, and no longer than the open one (openLoopFor).
const costProfileFor = 10 * time.Second

// costParkedEnv sets how many runs BenchmarkSystemCost parks before its
// load (none unless set).
const costParkedEnv = "WEFT_BENCH_COST_PARKED"

// costOpenRate is the rate BenchmarkSystemCost's open load offers, runs/s,
// for openLoopFor: the low load issue #40's budgets hold at as well.
const costOpenRate = 100

// BenchmarkSystemCost measures issue #40's budget per three-step run at
// two loads on a private Postgres with pg_stat_statements: BenchmarkSystem's
// closed loop (saturation) and costOpenRate runs/s offered for openLoopFor
// (an open loop). Each load has its own counters before and after, and
// reports the same metrics, the open one's names suffixed "@100"
// (cpu_ms/run@100, commits/run@100, …); the log ends with the budget table
// (costBudget): each row at both loads beside its budget. Per load it
// prints:
//
//   - Postgres statements per run (top-level, as pg_stat_statements counts
//     them: a plpgsql function's inner statements are its call's), the
//     costliest ones with calls, rows and milliseconds per run;
//   - rows written per run per table (pg_stat_user_tables: inserted,
//     updated and deleted), snapshot writes per run (run_snapshots rows
//     inserted and updated), transactions committed per run, and the WAL's
//     bytes and flushes per run;
//   - bus messages per run per stream (the streams' last sequence);
//   - CPU per run: the whole machine's less this load generator's
//     (cpu_ms/run), and by process (weft dev, Postgres, this load
//     generator; weft dev's and Postgres's together are proc_cpu_ms/run,
//     the figure to read when the machine runs something else too).
//
// For each load it also profiles weft dev's CPU and prints it by
// service: the dev stack labels each service's goroutines (service=relay,
// engine, …); the embedded NATS server, the shared NATS connection and the
// Go runtime's collector are told apart by their frames.
//
// With WEFT_BENCH_COST_PARKED=N it first parks N runs on a waitSignal
// step (as BenchmarkSystemParked does), so the cost of new runs with
// many runs waiting can be set beside the cost with none.
//
// It is a diagnostic: the private server is not the shared one the
// headline runs on, the profile costs weft dev some CPU, and the machine's
// CPU counts whatever else the machine runs.
func BenchmarkSystemCost(b *testing.B) {
	inst, db := privateDB(b, "shared_preload_libraries=pg_stat_statements")
	s := startDevStack(b, db)
	ctx := context.Background()
	ceiling := insertCeiling(b, db, 3*time.Second)
	if _, err := db.Pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		b.Fatal(err)
	}
	if n := envCount(b, costParkedEnv, 0); n > 0 {
		s.park(b, n)
	}
	for range b.N {
		var prof <-chan *profile.Profile
		closed := s.measureCost(b, inst, costLoad{label: "closed", run: func() systemLoad {
			prof = s.cpuProfile(costProfileFor)
			return s.closedLoop(b, systemPlan, systemRuns, systemClients)
		}})
		closed.load.report(b, s, ceiling)
		reportProfile(b, closed.label, <-prof)
		open := s.measureCost(b, inst, costLoad{label: fmt.Sprintf("%d runs/s offered", costOpenRate),
			suffix: fmt.Sprintf("@%d", costOpenRate), run: func() systemLoad {
				prof = s.cpuProfile(costProfileFor)
				return s.openLoop(b, systemPlan, costOpenRate, openLoopFor)
			}})
		b.ReportMetric(open.load.offered, "offered/s"+open.suffix)
		reportProfile(b, open.label, <-prof)
		reportBudget(closed, open)
	}
}

// privateDB starts a private Postgres with settings, stopped when b ends,
// and returns it with its postgres database, which weft dev migrates.
func privateDB(b *testing.B, settings ...string) (*pgboot.Instance, *weftest.DB) {
	ctx := context.Background()
	inst, err := pgboot.Start(ctx, pgboot.Config{Settings: settings})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = inst.Stop(context.Background()) })
	pool, err := pgxpool.New(ctx, inst.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return inst, &weftest.DB{Pool: pool, URL: inst.URL(), Name: "postgres"}
}

// say prints one line of the breakdown to stdout: a benchmark's own log
// keeps only its first ten lines.
func say(format string, args ...any) {
	fmt.Printf("    cost: "+format+"\n", args...)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// statementsSinceReset logs the statements Postgres ran per run since
// pg_stat_statements was last reset (weft dev's: the benchmark's own are
// marked /* bench */), the costliest first, under label, and returns their
// number per run.
func statementsSinceReset(b *testing.B, db *weftest.DB, label string, runs float64) float64 {
	ctx := context.Background()
	rows, err := db.Pool.Query(ctx, `/* bench */
		SELECT left(regexp_replace(query, '\s+', ' ', 'g'), 90), calls, rows, total_exec_time
		FROM pg_stat_statements
		WHERE query NOT LIKE '/* bench */%' AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time DESC`)
	if err != nil {
		b.Fatal(err)
	}
	var calls int64
	var execMS float64
	var top []string
	for rows.Next() {
		var q string
		var n, r int64
		var t float64
		if err := rows.Scan(&q, &n, &r, &t); err != nil {
			b.Fatal(err)
		}
		calls += n
		execMS += t
		if len(top) < 12 {
			top = append(top, fmt.Sprintf("  %6.2f calls %7.2f rows %6.3f ms/run (%.3f ms each)  %s", float64(n)/runs, float64(r)/runs, t/runs, t/float64(n), q))
		}
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	say("%s: Postgres statements per run: %.2f, executing %.2f ms per run; the costliest:\n%s", label, float64(calls)/runs, execMS/runs, strings.Join(top, "\n"))
	return float64(calls) / runs
}

// cpuProfile takes a CPU profile of weft dev for d, from now; the channel
// yields it (nil when it failed, said in the log).
func (s *devStack) cpuProfile(d time.Duration) <-chan *profile.Profile {
	out := make(chan *profile.Profile, 1)
	go func() {
		url := s.ops + "/debug/pprof/profile?seconds=" + strconv.Itoa(int(d.Seconds()))
		resp, err := s.hc.Get(url)
		if err != nil {
			out <- nil
			return
		}
		defer func() { _ = resp.Body.Close() }()
		p, err := profile.Parse(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			out <- nil
			return
		}
		out <- p
	}()
	return out
}

// reportProfile logs the share of weft dev's CPU per service during the
// load labelled label.
func reportProfile(b *testing.B, label string, p *profile.Profile) {
	if p == nil {
		b.Error("no CPU profile of weft dev (is WEFT_PPROF served?)")
		return
	}
	cpu := len(p.SampleType) - 1 // cpu nanoseconds
	by := map[string]int64{}
	var total int64
	for _, smp := range p.Sample {
		v := smp.Value[cpu]
		by[serviceOf(smp)] += v
		total += v
	}
	var lines []string
	for _, svc := range slices.SortedFunc(maps.Keys(by), func(x, y string) int { return int(by[y] - by[x]) }) {
		lines = append(lines, fmt.Sprintf("%s %.1f %%", svc, 100*float64(by[svc])/float64(total)))
	}
	say("%s: weft dev's CPU by service (%.1f s of CPU in %v): %s", label, float64(total)/1e9,
		time.Duration(p.DurationNanos), strings.Join(lines, ", "))
	if f, err := os.CreateTemp("", "weft-dev-cpu-*.pprof"); err == nil {
		if err := errors.Join(p.Write(f), f.Close()); err == nil {
			say("the profile is in %s (go tool pprof -tags / -top)", f.Name())
		}
	}
}

// serviceOf names what a sample's CPU was spent on: its service label, or
// for unlabelled goroutines, what its frames say.
func serviceOf(s *profile.Sample) string {
	if svc := s.Label["service"]; len(svc) > 0 {
		return svc[0]
	}
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			switch name := l.Function.Name; {
			case strings.HasPrefix(name, "github.com/nats-io/nats-server/"):
				return "nats-server (embedded)"
			case strings.HasPrefix(name, "github.com/nats-io/nats.go"):
				return "nats client (shared connection)"
			case strings.HasPrefix(name, "runtime.gcBgMarkWorker"), strings.HasPrefix(name, "runtime.bgsweep"),
				strings.HasPrefix(name, "runtime.bgscavenge"):
				return "Go runtime (GC)"
			}
		}
	}
	return "other"
}
