package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/internal/boot/pgboot"
	"github.com/weftrun/weft/pkg/weftest"
)

// costProfileFor is how long BenchmarkSystemCost profiles weft dev's CPU,
// from the start of the load: shorter than the load on any host so far.
const costProfileFor = 10 * time.Second

// costParkedEnv sets how many runs BenchmarkSystemCost parks before its
// load (none unless set).
const costParkedEnv = "WEFT_BENCH_COST_PARKED"

// BenchmarkSystemCost is BenchmarkSystem's closed loop on a private
// Postgres with pg_stat_statements, its cost per run broken down and
// printed:
//
//   - Postgres statements per run (top-level, as pg_stat_statements counts
//     them: a plpgsql function's inner statements are its call's), the
//     costliest ones with calls, rows and milliseconds per run;
//   - rows written per run per table (pg_stat_user_tables: inserted,
//     updated and deleted), transactions committed per run, and the
//     WAL's bytes and flushes per run;
//   - bus messages per run per stream (the streams' last sequence);
//   - CPU per run by process (weft dev, Postgres, this load generator)
//     and, from a CPU profile of weft dev, by service: the dev stack labels
//     each service's goroutines (service=relay, engine, …); the embedded
//     NATS server, the shared NATS connection and the Go runtime's
//     collector are told apart by their frames.
//
// With WEFT_BENCH_COST_PARKED=N it first parks N runs on a waitSignal
// step (as BenchmarkSystemParked does), so the cost of new runs with
// many runs waiting can be set beside the cost with none.
//
// It is a diagnostic: the private server is not the shared one the
// headline runs on, and the profile costs weft dev some CPU.
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
		before := s.costCounters(b, inst)
		if _, err := db.Pool.Exec(ctx, "/* bench */ SELECT pg_stat_statements_reset()"); err != nil {
			b.Fatal(err)
		}
		prof := s.cpuProfile(costProfileFor)
		load := s.closedLoop(b, systemPlan, systemRuns, systemClients)
		time.Sleep(11 * time.Second) // idle backends flush their table counters within 10 s
		after := s.costCounters(b, inst)
		load.report(b, s, ceiling)
		runs := float64(len(load.runIDs))
		after.reportSince(b, before, runs)
		reportStatements(b, db, runs)
		reportProfile(b, <-prof)
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

// costCounters are the cumulative counters BenchmarkSystemCost reads
// before and after a load.
type costCounters struct {
	rows map[string]int64 // rows written per table
	// updates and hotUpdates are the rows updated per table, and of them
	// the HOT ones (heap-only: no index entry written, the new version on
	// the old one's page).
	updates, hotUpdates map[string]int64
	msgs                map[string]uint64 // last sequence per stream
	cpu                 map[string]time.Duration
	machine             time.Duration // every CPU's busy time
	commits             int64         // the database's committed transactions
	// walBytes and walSyncs are the server's WAL written and its flushes
	// to disk (pg_stat_wal): a flush is what a durable commit waits for,
	// and one flush serves every commit waiting at once. walFPIs are the
	// whole pages it wrote: the first change to a page after a checkpoint
	// logs the page.
	walBytes, walSyncs, walFPIs int64
}

func (s *devStack) costCounters(b *testing.B, inst *pgboot.Instance) costCounters {
	ctx := context.Background()
	c := costCounters{rows: map[string]int64{}, updates: map[string]int64{}, hotUpdates: map[string]int64{},
		msgs: map[string]uint64{}}
	rows, err := s.db.Pool.Query(ctx, `/* bench */ SELECT relname, n_tup_ins + n_tup_upd + n_tup_del,
		n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables`)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var table string
		var n, upd, hot int64
		if err := rows.Scan(&table, &n, &upd, &hot); err != nil {
			b.Fatal(err)
		}
		c.rows[table], c.updates[table], c.hotUpdates[table] = n, upd, hot
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	// The benchmark's own polls commit too: about 4 a second.
	err = s.db.Pool.QueryRow(ctx, `/* bench */ SELECT xact_commit, wal_bytes::bigint, wal_sync, wal_fpi
		FROM pg_stat_database, pg_stat_wal WHERE datname = current_database()`).Scan(&c.commits, &c.walBytes, &c.walSyncs, &c.walFPIs)
	if err != nil {
		b.Fatal(err)
	}
	names := s.js.StreamNames(ctx)
	for name := range names.Name() {
		st, err := s.js.Stream(ctx, name)
		if err != nil {
			b.Fatal(err)
		}
		c.msgs[name] = st.CachedInfo().State.LastSeq
	}
	if err := names.Err(); err != nil {
		b.Fatal(err)
	}
	c.cpu = s.cpuByProcess(b, inst)
	c.machine = machineBusy(b)
	return c
}

// cpuByProcess is the CPU time so far of the topology's processes: weft
// dev, inst's server, and this load generator.
func (s *devStack) cpuByProcess(b *testing.B, inst *pgboot.Instance) map[string]time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return map[string]time.Duration{
		"weft dev":       procCPU(s.cmd.Process.Pid),
		"postgres":       postgresCPU(b, inst),
		"load generator": time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
	}
}

// reportSince logs what c counted since before, per run.
func (c costCounters) reportSince(b *testing.B, before costCounters, runs float64) {
	var total int64
	var lines []string
	for _, t := range slices.Sorted(maps.Keys(c.rows)) {
		if d := c.rows[t] - before.rows[t]; d > 0 {
			total += d
			lines = append(lines, fmt.Sprintf("%s %.2f", t, float64(d)/runs))
		}
	}
	say("rows written per run: %.2f (%s)", float64(total)/runs, strings.Join(lines, ", "))
	lines = lines[:0]
	for _, t := range slices.Sorted(maps.Keys(c.updates)) {
		if d := c.updates[t] - before.updates[t]; d > 0 {
			hot := c.hotUpdates[t] - before.hotUpdates[t]
			lines = append(lines, fmt.Sprintf("%s %.2f (%.0f %% HOT)", t, float64(d)/runs, 100*float64(hot)/float64(d)))
		}
	}
	say("rows updated per run, and the share of heap-only (HOT) updates, which write no index entry: %s", strings.Join(lines, ", "))
	say("transactions committed per run: %.2f (read-only ones included); WAL per run: %.0f bytes, %.2f whole pages, %.2f flushes",
		float64(c.commits-before.commits)/runs, float64(c.walBytes-before.walBytes)/runs,
		float64(c.walFPIs-before.walFPIs)/runs, float64(c.walSyncs-before.walSyncs)/runs)
	b.ReportMetric(float64(c.walBytes-before.walBytes)/runs, "wal_bytes/run")
	b.ReportMetric(float64(c.commits-before.commits)/runs, "commits/run")
	b.ReportMetric(float64(total)/runs, "rows/run")
	lines = lines[:0]
	var msgs uint64
	for _, st := range slices.Sorted(maps.Keys(c.msgs)) {
		d := c.msgs[st] - before.msgs[st]
		msgs += d
		lines = append(lines, fmt.Sprintf("%s %.2f", st, float64(d)/runs))
	}
	say("bus messages per run: %.2f (%s)", float64(msgs)/runs, strings.Join(lines, ", "))
	b.ReportMetric(float64(msgs)/runs, "msgs/run")
	lines = lines[:0]
	for _, p := range []string{"weft dev", "postgres", "load generator"} {
		lines = append(lines, fmt.Sprintf("%s %.2f", p, ms(c.cpu[p]-before.cpu[p])/runs))
	}
	say("CPU ms per run: machine %.2f; %s", ms(c.machine-before.machine)/runs, strings.Join(lines, ", "))
	b.ReportMetric(ms(c.machine-before.machine)/runs, "cpu_ms/run")
}

// say prints one line of the breakdown to stdout: a benchmark's own log
// keeps only its first ten lines.
func say(format string, args ...any) {
	fmt.Printf("    cost: "+format+"\n", args...)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// reportStatements logs the statements Postgres ran per run (weft dev's:
// the benchmark's own are marked /* bench */), the costliest first.
func reportStatements(b *testing.B, db *weftest.DB, runs float64) {
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
	say("Postgres statements per run: %.2f, executing %.2f ms per run; the costliest:\n%s", float64(calls)/runs, execMS/runs, strings.Join(top, "\n"))
	b.ReportMetric(float64(calls)/runs, "stmts/run")
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

// reportProfile logs the share of weft dev's CPU per service.
func reportProfile(b *testing.B, p *profile.Profile) {
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
	say("weft dev's CPU by service (%.1f s of CPU in %v): %s", float64(total)/1e9,
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

// procCPU is a process's user and system CPU time so far (0 when it is
// gone).
func procCPU(pid int) time.Duration {
	f := procStat(pid)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// procStat is /proc/<pid>/stat's fields after the command's name (which is
// in parentheses and may hold spaces): the state is [0], the parent's pid
// [1]. Nil when the process is gone.
func procStat(pid int) []string {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
}

// clockTicks is Linux's USER_HZ, the unit of /proc's CPU times.
const clockTicks = 100

// postgresCPU is the CPU time of inst's server: its postmaster and every
// process it started that still runs.
func postgresCPU(b *testing.B, inst *pgboot.Instance) time.Duration {
	raw, err := os.ReadFile(filepath.Join(inst.DataDir(), "data", "postmaster.pid"))
	if err != nil {
		b.Fatal(err)
	}
	postmaster, err := strconv.Atoi(strings.SplitN(string(raw), "\n", 2)[0])
	if err != nil {
		b.Fatal(err)
	}
	total := procCPU(postmaster)
	parent := strconv.Itoa(postmaster)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := procStat(pid); len(f) > 1 && f[1] == parent {
			total += procCPU(pid)
		}
	}
	return total
}

// machineBusy is the time every CPU of the machine has spent not idle.
func machineBusy(b *testing.B) time.Duration {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(strings.SplitN(string(raw), "\n", 2)[0])[1:] // cpu user nice system idle iowait irq softirq steal
	var busy int64
	for i, v := range f {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i != 3 && i != 4 && i < 8 { // not idle, not iowait
			busy += n
		}
	}
	return time.Duration(busy) * time.Second / clockTicks
}
