package soak

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/client"
)

// checkResult is one invariant's verdict.
type checkResult struct {
	Name string `json:"name"`
	// OK is true when the invariant held; Skipped when it could not be
	// checked (Note says why), which is not a failure.
	OK       bool     `json:"ok"`
	Skipped  bool     `json:"skipped,omitempty"`
	Count    int      `json:"violations"`
	Examples []string `json:"examples,omitempty"`
	Note     string   `json:"note,omitempty"`
}

// maxExamples bounds the examples each check reports.
const maxExamples = 8

// add records one violation.
func (c *checkResult) add(format string, args ...any) {
	c.OK = false
	c.Count++
	if len(c.Examples) < maxExamples {
		c.Examples = append(c.Examples, fmt.Sprintf(format, args...))
	}
}

// sqlCheck is an invariant that holds when query returns no row; each row
// (two text columns) is a violation.
type sqlCheck struct {
	name, query string
}

// sqlChecks read the log alone (and, for the concurrency limit's places,
// the engine's tables).
var sqlChecks = []sqlCheck{
	{"every run ended", `
		SELECT a.run_id::text, coalesce(a.event_data->>'planId', '') FROM run_events a
		WHERE a.event_type = 'RunApproved' AND NOT EXISTS (SELECT 1 FROM run_events e WHERE e.run_id = a.run_id
			AND e.event_type IN ('RunCompleted', 'RunFailed', 'RunCancelled'))`},
	{"no runSeq gap or duplicate", `
		SELECT e.run_id::text, format('%s events, %s distinct runSeqs, %s..%s, head %s', count(*), count(DISTINCT e.run_seq),
			min(e.run_seq), max(e.run_seq), max(h.head_seq))
		FROM run_events e LEFT JOIN run_heads h ON h.run_id = e.run_id GROUP BY e.run_id
		HAVING count(*) <> count(DISTINCT e.run_seq) OR min(e.run_seq) <> 1 OR max(e.run_seq) <> count(*)
			OR max(h.head_seq) IS DISTINCT FROM max(e.run_seq)`},
	{"each run approved once", `
		SELECT run_id::text, count(*)::text FROM run_events WHERE event_type = 'RunApproved' GROUP BY run_id HAVING count(*) > 1
		UNION ALL
		SELECT event_data->>'runRequestId', string_agg(run_id::text, ' ') FROM run_events WHERE event_type = 'RunApproved'
		GROUP BY event_data->>'tenantId', event_data->>'projectId', event_data->>'environmentId', event_data->>'planId',
			event_data->>'planVersion', event_data->>'runRequestId' HAVING count(DISTINCT run_id) > 1`},
	{"each signal accepted once", `
		SELECT run_id::text, format('%s %s accepted %s times', event_data->>'signalName', event_data->>'signalId', count(*))
		FROM run_events WHERE event_type = 'SignalAccepted'
		GROUP BY run_id, event_data->>'signalName', event_data->>'signalId' HAVING count(*) > 1`},
	{"each signal applied at most once", `
		SELECT run_id::text, format('%s %s applied %s times', event_data->>'signalName', event_data->>'signalId', count(*))
		FROM run_events WHERE event_type = 'SignalApplied'
		GROUP BY run_id, event_data->>'signalName', event_data->>'signalId' HAVING count(*) > 1`},
	{"every accepted signal of a running run applied", `
		SELECT s.run_id::text, format('%s %s (runSeq %s) not applied', s.event_data->>'signalName', s.event_data->>'signalId', s.run_seq)
		FROM run_events s WHERE s.event_type = 'SignalAccepted'
		AND NOT EXISTS (SELECT 1 FROM run_events a WHERE a.run_id = s.run_id AND a.event_type = 'SignalApplied'
			AND a.event_data->>'signalId' = s.event_data->>'signalId' AND a.event_data->>'signalName' = s.event_data->>'signalName')
		AND NOT EXISTS (SELECT 1 FROM run_events e WHERE e.run_id = s.run_id
			AND e.event_type IN ('RunCompleted', 'RunFailed', 'RunCancelled'))`},
	{"signals applied in acceptance order", `
		WITH applied AS (
			SELECT a.run_id, a.run_seq, a.event_data->>'signalName' AS name, s.run_seq AS accepted_seq,
				lag(s.run_seq) OVER (PARTITION BY a.run_id ORDER BY a.run_seq) AS prev_accepted_seq
			FROM run_events a JOIN run_events s ON s.run_id = a.run_id AND s.event_type = 'SignalAccepted'
				AND s.event_data->>'signalId' = a.event_data->>'signalId' AND s.event_data->>'signalName' = a.event_data->>'signalName'
			WHERE a.event_type = 'SignalApplied')
		SELECT run_id::text, format('%s accepted at runSeq %s applied (runSeq %s) after the signal accepted at runSeq %s',
			name, accepted_seq, run_seq, prev_accepted_seq)
		FROM applied WHERE accepted_seq < prev_accepted_seq`},
	{"one outcome per logical attempt", `
		SELECT run_id::text, format('step %s attempt %s: %s', step_id, logical_attempt_id, string_agg(event_type, ', ' ORDER BY run_seq))
		FROM run_events WHERE event_type IN ('StepCompleted', 'StepFailed', 'StepRetryScheduled')
		GROUP BY run_id, step_id, logical_attempt_id HAVING count(*) > 1`},
	{"no outbox or dead-letter rows left", `
		SELECT 'outbox', format('%s rows, oldest %s', count(*), min(created_at)) FROM outbox HAVING count(*) > 0
		UNION ALL
		SELECT 'outbox_dead', format('%s rows: %s', count(*), min(last_error)) FROM outbox_dead HAVING count(*) > 0`},
	{"a concurrency limit never exceeded", `
		WITH iv AS (
			SELECT s.run_id, s.persisted_at AS started, coalesce(e.persisted_at, 'infinity') AS ended
			FROM run_events a JOIN run_events s ON s.run_id = a.run_id AND s.event_type = 'RunStarted'
			LEFT JOIN run_events e ON e.run_id = a.run_id AND e.event_type IN ('RunCompleted', 'RunFailed', 'RunCancelled')
			WHERE a.event_type = 'RunApproved' AND a.event_data->>'planId' = 'soak-limited')
		SELECT x.run_id::text, format('%s other runs of soak-limited running when it started (limit ` + strconv.Itoa(limitedRuns) + `)', count(*))
		FROM iv x JOIN iv y ON y.run_id <> x.run_id AND y.started <= x.started AND y.ended > x.started
		GROUP BY x.run_id HAVING count(*) >= ` + strconv.Itoa(limitedRuns)},
	{"no place of a concurrency limit held, nor a wake left, once its runs ended", `
		SELECT k.run_id::text, 'holds ' || k.slot FROM engine_run_keys k
		WHERE EXISTS (SELECT 1 FROM run_events e WHERE e.run_id = k.run_id AND e.event_type IN ('RunCompleted', 'RunFailed', 'RunCancelled'))
		UNION ALL
		SELECT 'engine_key_wakes', format('%s wakes left', count(*)) FROM engine_key_wakes HAVING count(*) > 0`},
	{"no stuck timers", `
		SELECT run_id::text, format('%s timer of step %s attempt %s due %s', kind, step_id, logical_attempt, due_at)
		FROM engine_timers WHERE due_at < now() - interval '30 seconds'`},
}

// runSQLCheck runs one sqlCheck.
func runSQLCheck(ctx context.Context, top *topology, c sqlCheck) (checkResult, error) {
	res := checkResult{Name: c.name, OK: true}
	rows, err := top.admin.Query(ctx, c.query)
	if err != nil {
		return res, fmt.Errorf("check %q: %w", c.name, err)
	}
	for rows.Next() {
		var a, b string
		if err := rows.Scan(&a, &b); err != nil {
			rows.Close()
			return res, fmt.Errorf("check %q: %w", c.name, err)
		}
		res.add("%s: %s", a, b)
	}
	rows.Close()
	return res, rows.Err()
}

// quiesce waits, up to bound, until every run has ended and the outbox and
// the key queue's wakes are empty, finalizing left-waiting runs every 10 s, and returns how long it
// waited.
func quiesce(ctx context.Context, top *topology, c *client.Client, bound time.Duration, logger *slog.Logger) time.Duration {
	began := time.Now()
	lastFinal := time.Time{}
	_ = poll(ctx, bound, func() (bool, error) {
		if time.Since(lastFinal) > 10*time.Second {
			if err := finalize(ctx, top, c); err != nil {
				logger.WarnContext(ctx, "soak: finalize", "err", err)
			}
			lastFinal = time.Now()
		}
		var open, outbox, timers, wakes int
		err := top.admin.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM run_events a WHERE a.event_type = 'RunApproved' AND NOT EXISTS (
				SELECT 1 FROM run_events e WHERE e.run_id = a.run_id AND e.event_type IN ('RunCompleted', 'RunFailed', 'RunCancelled'))),
			(SELECT count(*) FROM outbox),
			(SELECT count(*) FROM engine_timers WHERE due_at < now() - interval '30 seconds'),
			(SELECT count(*) FROM engine_key_wakes)`).Scan(&open, &outbox, &timers, &wakes)
		return err == nil && open == 0 && outbox == 0 && timers == 0 && wakes == 0, nil
	})
	return time.Since(began)
}

// check runs every invariant and fills sum.
func check(ctx context.Context, top *topology, led *ledger, c *client.Client, sum *Summary) error {
	for _, sc := range sqlChecks {
		res, err := runSQLCheck(ctx, top, sc)
		if err != nil {
			return err
		}
		sum.Checks = append(sum.Checks, res)
	}
	ledgerRes, err := checkLedger(ctx, top, led, sum)
	if err != nil {
		return err
	}
	sum.Checks = append(sum.Checks, ledgerRes...)
	execs, err := checkExecutions(ctx, top, sum)
	if err != nil {
		return err
	}
	sum.Checks = append(sum.Checks, execs)
	cons, err := checkConsumers(ctx, top)
	if err != nil {
		return err
	}
	sum.Checks = append(sum.Checks, cons, checkReady(ctx, top), checkReadyWhileMissing(sum.Injected),
		checkCrashes(top))
	snap, err := checkSnapshots(ctx, top, c)
	if err != nil {
		return err
	}
	sum.Checks = append(sum.Checks, snap)
	return counts(ctx, top, sum)
}

// checkLedger compares what the driver got 2xx answers for with the log:
// every acknowledged start is a run of its request, every acknowledged
// signal is accepted in the log, and no answer contradicted an earlier one.
func checkLedger(ctx context.Context, top *topology, led *ledger, sum *Summary) ([]checkResult, error) {
	led.mu.Lock()
	defer led.mu.Unlock()
	starts := checkResult{Name: "every acknowledged start in the log", OK: true}
	signals := checkResult{Name: "every acknowledged signal in the log", OK: true}
	answers := checkResult{Name: "repeated requests answered alike", OK: true}
	byRun := map[string]string{} // runId → runRequestId, from the log
	rows, err := top.admin.Query(ctx, `SELECT run_id::text, event_data->>'runRequestId' FROM run_events WHERE event_type = 'RunApproved'`)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	for rows.Next() {
		var run, rr string
		if err := rows.Scan(&run, &rr); err != nil {
			rows.Close()
			return nil, fmt.Errorf("ledger: %w", err)
		}
		byRun[run] = rr
	}
	rows.Close()
	for _, s := range led.starts {
		if s.RunID == "" {
			continue
		}
		sum.StartsAcked++
		if rr, ok := byRun[s.RunID]; !ok || rr != s.RunRequestID {
			starts.add("%s: run %s acknowledged, log has request %q", s.RunRequestID, s.RunID, rr)
		}
	}
	accepted, err := acceptedSignals(ctx, top)
	if err != nil {
		return nil, err
	}
	for _, s := range led.signals {
		if !s.Acked {
			continue
		}
		sum.SignalsAcked++
		if !accepted[[3]string{s.RunID, s.Name, s.ID}] {
			signals.add("%s: %s %s acknowledged, not in the log", s.RunID, s.Name, s.ID)
		}
	}
	for _, a := range led.anomalies {
		answers.add("%s", a)
	}
	sum.StartErrors, sum.SignalErrors = led.startErrs, led.signalErrs
	return []checkResult{starts, signals, answers}, nil
}

// acceptedSignals is every (run, name, id) with a SignalAccepted.
func acceptedSignals(ctx context.Context, top *topology) (map[[3]string]bool, error) {
	rows, err := top.admin.Query(ctx, `SELECT run_id::text, event_data->>'signalName', event_data->>'signalId'
		FROM run_events WHERE event_type = 'SignalAccepted'`)
	if err != nil {
		return nil, fmt.Errorf("accepted signals: %w", err)
	}
	out := map[[3]string]bool{}
	var run, name, id string
	_, err = pgx.ForEachRow(rows, []any{&run, &name, &id}, func() error {
		out[[3]string{run, name, id}] = true
		return nil
	})
	return out, err
}

// counts fills the summary's totals.
func counts(ctx context.Context, top *topology, sum *Summary) error {
	sum.RunsByStatus = map[string]int{}
	err := top.admin.QueryRow(ctx, `SELECT count(*) FROM run_events`).Scan(&sum.Events)
	if err != nil {
		return fmt.Errorf("counts: %w", err)
	}
	rows, err := top.admin.Query(ctx, `
		SELECT coalesce((SELECT e.event_type FROM run_events e WHERE e.run_id = a.run_id
			AND e.event_type IN ('RunCompleted', 'RunFailed', 'RunCancelled') ORDER BY e.run_seq DESC LIMIT 1), 'not ended'), count(*)
		FROM run_events a WHERE a.event_type = 'RunApproved' GROUP BY 1`)
	if err != nil {
		return fmt.Errorf("counts: %w", err)
	}
	var status string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&status, &n}, func() error {
		sum.RunsByStatus[status] = n
		sum.Runs += n
		return nil
	})
	return err
}

// runKinds maps each run to its plan kind.
func runKinds(ctx context.Context, top *topology) (map[string]string, error) {
	rows, err := top.admin.Query(ctx, `SELECT run_id::text, coalesce(event_data->>'planId', '') FROM run_events WHERE event_type = 'RunApproved'`)
	if err != nil {
		return nil, fmt.Errorf("run kinds: %w", err)
	}
	out := map[string]string{}
	var run, pid string
	_, err = pgx.ForEachRow(rows, []any{&run, &pid}, func() error {
		out[run] = kindOf(pid)
		return nil
	})
	return out, err
}
