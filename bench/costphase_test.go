package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weftrun/weft/internal/boot/pgboot"
)

// statsFlushWait is how long BenchmarkSystemCost waits after a load before
// it reads Postgres's table, database and WAL counters: a backend flushes
// its counters at most once a second, and an idle one within 10 s.
const statsFlushWait = 11 * time.Second

// costLoad is one load BenchmarkSystemCost measures.
type costLoad struct {
	label  string // names the load in the log: "closed", "100 runs/s offered"
	suffix string // ends its metrics' names: "" for the closed load, "@100"
	run    func() systemLoad
}

// costResult is what one load cost, per run.
type costResult struct {
	costLoad
	load   systemLoad
	perRun map[string]float64 // by metric name, without the suffix
}

// costCounters are cumulative counters, read before and after a load, by
// name: "ins/<table>", "upd/<table>", "del/<table>", "hot/<table>" (rows
// inserted, updated, deleted, and updated heap-only: no index entry
// written, the new version on the old one's page); "msgs/<stream>" (its
// last sequence); "cpu/<process>" and "machine" (ms; every CPU's busy
// time); "commits" (the database's committed transactions); "wal_bytes"
// and "wal_syncs" (the WAL written and its flushes to disk: a flush is what
// a durable commit waits for, and one serves every commit waiting at once)
// and "wal_fpi" (whole pages written: the first change to a page after a
// checkpoint logs the page).
type costCounters map[string]float64

// minus returns c less before, key by key.
func (c costCounters) minus(before costCounters) costCounters {
	out := costCounters{}
	for k, v := range c {
		out[k] = v - before[k]
	}
	return out
}

// sum is the sum of c's counters named prefix+something, for the
// somethings keep holds (nil: all).
func (c costCounters) sum(prefix string, keep func(string) bool) float64 {
	var total float64
	for k, v := range c {
		if name, ok := strings.CutPrefix(k, prefix); ok && (keep == nil || keep(name)) {
			total += v
		}
	}
	return total
}

// names are the somethings of c's counters named prefix+something, sorted.
func (c costCounters) names(prefix string) []string {
	var out []string
	for k := range c {
		if name, ok := strings.CutPrefix(k, prefix); ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// measureCost runs l and returns its cost per run, logged and reported.
// The CPU, the bus and the statements are read as soon as the stack is
// quiet after the load (nothing in the outbox, every message acked);
// Postgres's table and WAL counters statsFlushWait later, so they include
// that wait's background commits (the stack's leases and polls: a few a
// second).
func (s *devStack) measureCost(b *testing.B, inst *pgboot.Instance, l costLoad) costResult {
	ctx := context.Background()
	before := s.liveCounters(b, inst)
	maps.Copy(before, s.dbCounters(b))
	if _, err := s.db.Pool.Exec(ctx, "/* bench */ SELECT pg_stat_statements_reset()"); err != nil {
		b.Fatal(err)
	}
	load := l.run()
	if err := s.waitQuiet(ctx, 2*time.Minute); err != nil {
		b.Fatal(err)
	}
	after := s.liveCounters(b, inst)
	runs := float64(len(load.runIDs))
	stmts := statementsSinceReset(b, s.db, l.label, runs)
	time.Sleep(statsFlushWait)
	maps.Copy(after, s.dbCounters(b))
	r := costResult{costLoad: l, load: load, perRun: logCost(l.label, after.minus(before), runs)}
	r.perRun["stmts/run"] = stmts
	for name, v := range r.perRun {
		b.ReportMetric(v, name+l.suffix)
	}
	return r
}

// dbCounters reads the database's counters: rows per table, commits, WAL.
func (s *devStack) dbCounters(b *testing.B) costCounters {
	ctx := context.Background()
	c := costCounters{}
	rows, err := s.db.Pool.Query(ctx, `/* bench */ SELECT relname, n_tup_ins, n_tup_upd, n_tup_del, n_tup_hot_upd
		FROM pg_stat_user_tables`)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var table string
		var ins, upd, del, hot int64
		if err := rows.Scan(&table, &ins, &upd, &del, &hot); err != nil {
			b.Fatal(err)
		}
		c["ins/"+table], c["upd/"+table], c["del/"+table], c["hot/"+table] = float64(ins), float64(upd), float64(del), float64(hot)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	// The benchmark's own polls commit too: about 4 a second.
	var commits, walBytes, walSyncs, walFPIs int64
	err = s.db.Pool.QueryRow(ctx, `/* bench */ SELECT xact_commit, wal_bytes::bigint, wal_sync, wal_fpi
		FROM pg_stat_database, pg_stat_wal WHERE datname = current_database()`).Scan(&commits, &walBytes, &walSyncs, &walFPIs)
	if err != nil {
		b.Fatal(err)
	}
	c["commits"], c["wal_bytes"], c["wal_syncs"], c["wal_fpi"] = float64(commits), float64(walBytes), float64(walSyncs), float64(walFPIs)
	return c
}

// liveCounters reads the counters that are current when read: the
// streams' last sequences and the CPU times.
func (s *devStack) liveCounters(b *testing.B, inst *pgboot.Instance) costCounters {
	ctx := context.Background()
	c := costCounters{}
	names := s.js.StreamNames(ctx)
	for name := range names.Name() {
		st, err := s.js.Stream(ctx, name)
		if err != nil {
			b.Fatal(err)
		}
		c["msgs/"+name] = float64(st.CachedInfo().State.LastSeq)
	}
	if err := names.Err(); err != nil {
		b.Fatal(err)
	}
	for p, d := range s.cpuByProcess(b, inst) {
		c["cpu/"+p] = ms(d)
	}
	c["machine"] = ms(machineBusy(b))
	return c
}

// isSnapshots says whether table holds the read model's run snapshots.
func isSnapshots(table string) bool { return strings.HasPrefix(table, "run_snapshots") }

// logCost logs d, a load's counters, per run, and returns the budget's
// figures per run by metric name.
func logCost(label string, d costCounters, runs float64) map[string]float64 {
	written := func(t string) float64 { return d["ins/"+t] + d["upd/"+t] + d["del/"+t] }
	var lines []string
	var rows float64
	for _, t := range d.names("ins/") {
		if w := written(t); w > 0 {
			rows += w
			lines = append(lines, fmt.Sprintf("%s %.2f", t, w/runs))
		}
	}
	say("%s: rows written per run: %.2f (%s)", label, rows/runs, strings.Join(lines, ", "))
	lines = lines[:0]
	for _, t := range d.names("upd/") {
		if u := d["upd/"+t]; u > 0 {
			lines = append(lines, fmt.Sprintf("%s %.2f (%.0f %% HOT)", t, u/runs, 100*d["hot/"+t]/u))
		}
	}
	say("%s: rows updated per run, and the share of heap-only (HOT) updates, which write no index entry: %s", label, strings.Join(lines, ", "))
	snapshots := d.sum("ins/", isSnapshots) + d.sum("upd/", isSnapshots)
	say("%s: snapshot writes per run: %.2f (inserted %.2f, updated %.2f)", label, snapshots/runs,
		d.sum("ins/", isSnapshots)/runs, d.sum("upd/", isSnapshots)/runs)
	say("%s: transactions committed per run: %.2f (read-only ones included); WAL per run: %.0f bytes, %.2f whole pages, %.2f flushes",
		label, d["commits"]/runs, d["wal_bytes"]/runs, d["wal_fpi"]/runs, d["wal_syncs"]/runs)
	lines = lines[:0]
	for _, st := range d.names("msgs/") {
		lines = append(lines, fmt.Sprintf("%s %.2f", st, d["msgs/"+st]/runs))
	}
	msgs := d.sum("msgs/", nil)
	say("%s: bus messages per run: %.2f (%s)", label, msgs/runs, strings.Join(lines, ", "))
	cpu := d["machine"] - d["cpu/load generator"]
	lines = lines[:0]
	for _, p := range []string{"weft dev", "postgres", "load generator"} {
		lines = append(lines, fmt.Sprintf("%s %.2f", p, d["cpu/"+p]/runs))
	}
	procs := d["cpu/weft dev"] + d["cpu/postgres"]
	say("%s: CPU ms per run: machine %.2f less the load generator's, %.2f; weft dev and Postgres %.2f (%s)",
		label, d["machine"]/runs, cpu/runs, procs/runs, strings.Join(lines, ", "))
	return map[string]float64{
		"cpu_ms/run": cpu / runs, "proc_cpu_ms/run": procs / runs, "commits/run": d["commits"] / runs, "rows/run": rows / runs,
		"msgs/run": msgs / runs, "snapshot_writes/run": snapshots / runs, "wal_bytes/run": d["wal_bytes"] / runs,
	}
}

// costBudget is issue #40's budget per three-step run, which holds at
// saturation and at 100 runs/s offered alike: each row's metric, its
// ceiling, and the scale the table prints it at.
var costBudget = []struct {
	row, metric   string
	budget, scale float64
}{
	{"CPU ms, machine less load generator", "cpu_ms/run", 2.0, 1},
	// The same, counted in weft dev's and Postgres's processes only: what
	// the row is when the machine runs something else too.
	{"CPU ms, weft dev and Postgres", "proc_cpu_ms/run", 2.0, 1},
	{"commits", "commits/run", 6, 1},
	{"rows written", "rows/run", 25, 1},
	{"statements", "stmts/run", 10, 1},
	{"bus messages", "msgs/run", 9, 1},
	{"snapshot writes", "snapshot_writes/run", 2, 1},
	{"WAL KB", "wal_bytes/run", 15, 1e-3},
}

// reportBudget logs the budget table: each row per run at the closed load
// and the open one, beside its budget; a figure over budget is starred.
func reportBudget(closed, open costResult) {
	cell := func(v, budget float64) string {
		if v > budget {
			return fmt.Sprintf("%9.2f*", v)
		}
		return fmt.Sprintf("%9.2f ", v)
	}
	lines := []string{fmt.Sprintf("  %-36s %10s %10s %9s", "per run", closed.label, strings.TrimPrefix(open.suffix, "@")+"/s", "budget")}
	for _, r := range costBudget {
		c, o := closed.perRun[r.metric]*r.scale, open.perRun[r.metric]*r.scale
		lines = append(lines, fmt.Sprintf("  %-36s %s %s %9.1f", r.row, cell(c, r.budget), cell(o, r.budget), r.budget))
	}
	say("budget (issue #40; * over budget):\n%s", strings.Join(lines, "\n"))
}
