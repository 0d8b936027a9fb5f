package projector

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// runRow is one run's row of run_snapshots, locked by the transaction that
// read it.
type runRow struct {
	snap  events.RunSnapshot
	ident api.RunIdentity // from its RunApproved
	// planSteps is the plan's graph ([]planStep), set only by a RunApproved
	// applied in this batch: the stored one is neither read nor rewritten
	// otherwise. stepsTotal is the stored steps_total.
	planSteps  json.RawMessage
	stepsTotal int
	// requestID is the run's run request id, set like planSteps only by
	// a RunApproved applied in this batch (nil: the stored one stays).
	requestID *string
	// parentRunID is a child run's parent run id, set like requestID only
	// by a RunApproved applied in this batch that names a parent (nil: the
	// stored one stays).
	parentRunID *string
	// gapSeen is the runSeq of an event seen past a gap (0: no gap open),
	// and gapSince when the gap was found.
	gapSeen       int64
	gapSince      time.Time
	createdAt     time.Time
	lastPersisted time.Time
	lagMs         int64
	// fresh marks a row that run_snapshots does not have yet (freshRow):
	// the batch's writes insert it (rowInsertSQL) instead of updating it.
	fresh bool
}

// stale reports whether the run has an open gap.
func (r *runRow) stale() bool { return r.gapSeen > 0 }

// freshRow is the row of a run that run_snapshots does not have yet, as
// readRows would read a placeholder of it (rowsEnsureSQL), its created_at
// left to the insert (rowInsertSQL): the batch's writes insert it whole.
func freshRow(runID string) *runRow {
	return &runRow{snap: events.RunSnapshot{RunID: runID}, fresh: true}
}

// rowsEnsureSQL creates, as placeholders, the missing rows of runs that a
// batch projects without their first bus event (a resync, a rebuild, the
// second round trip of rowsLock), those the log has (run_heads: a forged
// message names no new row into being), in run id order, in the batch's
// transaction; the batch's writes then update them. A placeholder is
// invisible to every reader until a batch fills it in: its tenant is empty.
const rowsEnsureSQL = `
INSERT INTO run_snapshots (run_id, status, last_event_seq, snapshot)
SELECT id, 'PENDING', 0, '{}' FROM unnest($1::uuid[]) AS id
WHERE EXISTS (SELECT 1 FROM run_heads h WHERE h.run_id = id)
ORDER BY id
ON CONFLICT (run_id) DO NOTHING`

// rowsLockSQL locks the rows in run id order and reads them.
const rowsLockSQL = `
SELECT run_id::text, tenant_id, project_id, environment_id, plan_id, plan_version,
       snapshot, steps_total, coalesce(gap_seen_seq, 0), gap_since, created_at,
       last_persisted_at, coalesce(lag_ms, 0)
FROM run_snapshots WHERE run_id = ANY($1::uuid[]) ORDER BY run_id FOR UPDATE`

// freshCheckSQL is busCheckSQL for the runs whose bus events include
// their first (runSeq 1), which may have no row yet: for each (run,
// runSeq) of $1/$2 whose run the log has (run_heads), the log's event
// there (empty strings when there is none). Every one is looked up, as
// busCheckSQL looks up those of a row at watermark 0; a run the log does
// not have gets no answer.
const freshCheckSQL = `
SELECT b.run_id::text, b.run_seq, coalesce(e.event_id::text, ''), coalesce(e.idempotency_key, ''),
       coalesce(e.event_type, '')
FROM unnest($1::uuid[], $2::bigint[]) AS b(run_id, run_seq)
JOIN run_heads h ON h.run_id = b.run_id
LEFT JOIN run_events e ON e.run_id = b.run_id AND e.run_seq = b.run_seq`

// rowsLock locks and reads the rows of runIDs, which must be sorted and
// distinct, and reads what the log holds where byRun's bus events past the
// watermarks claim to be (busCheckSQL, verify.go), before any event is
// applied. A run the log does not have gets no row (nil), and so all its
// bus events are forged (verifyBus).
//
// A run's row exists from its first batch on, so most batches find every
// row. The first round trip locks them all, and besides:
//
//   - A run whose bus events include its first (runSeq 1) and whose row it
//     does not find gets a fresh row (freshRow) if the log has the run
//     (freshCheckSQL, which also checks its bus events from runSeq 1): the
//     batch's writes insert it once, whole (rowInsertSQL, queueSave, in
//     run id order), instead of creating a placeholder and updating it.
//     A fresh row that the batch leaves unchanged (the log refuted all its
//     run's bus events) is not written: the run stays without a row, as
//     before its first batch.
//   - A run projected without bus events (a resync, a rebuild) has its
//     missing row created as a placeholder (rowsEnsureSQL) ahead of the
//     lock: those transactions project many runs, and a fresh row that
//     another batch creates meanwhile would fail them all.
//   - A run the log has whose row it did not find otherwise (its first
//     event came back late, or the log was read without the bus) gets a
//     second round trip that creates and locks its row out of run id order.
//
// A fresh row's insert is a plain INSERT, never ON CONFLICT DO NOTHING:
// COMMIT travels with it, so a skipped insert would commit, and ack,
// events never projected. A row that another projector's batch of the same
// new run, a resync or a rebuild creates meanwhile fails it with a unique
// violation; the transaction rolls back and the batch's messages come back
// (batch.Nak after RetryDelay), to find the row and update it.
//
// Deadlocks: a batch takes all its row locks in its first round trip, in
// run id order, and in its writes waits only for another transaction's
// uncommitted insert of one of its fresh rows, which it inserts in run id
// order too. So a batch waiting in its writes waits for one that is
// writing too and inserted a lower run id first, never in a cycle, unless
// it waits for a transaction that created rows before taking its locks
// (rowsEnsureSQL: a resync, a rebuild, the second round trip), which can
// then wait for the first one's locks. Postgres breaks such a deadlock,
// as it breaks one between two second round trips, by failing one of the
// transactions: a batch's messages come back, a resync runs again at its
// next pass.
func rowsLock(ctx context.Context, tx pgx.Tx, runIDs []string, byRun map[string][]events.Event) (map[string]*runRow, map[logKey]logIdentity, error) {
	p := firstPlan(runIDs, byRun)
	l, err := lockRows(ctx, tx, p, byRun)
	if err != nil {
		return nil, nil, err
	}
	l.adoptFresh()
	var missing []string
	for _, id := range runIDs {
		// A run of p.fresh still without a row is one the log does not have.
		if l.rows[id] == nil && !slices.Contains(p.fresh, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return l.rows, l.logged, nil
	}
	more, err := lockRows(ctx, tx, lockPlan{ensure: missing, lock: missing}, byRun)
	if err != nil {
		return nil, nil, err
	}
	maps.Copy(l.rows, more.rows)
	maps.Copy(l.logged, more.logged)
	return l.rows, l.logged, nil
}

// firstPlan is rowsLock's first round trip: it locks every row of
// runIDs, creates the missing rows of the runs without bus events, and
// checks from runSeq 1 the runs whose bus events include their first.
func firstPlan(runIDs []string, byRun map[string][]events.Event) lockPlan {
	return lockPlan{ensure: unbussed(runIDs, byRun), fresh: firstSeen(runIDs, byRun), lock: runIDs}
}

// firstSeen returns the runs of runIDs whose bus events include their
// first (runSeq 1): those whose row the batch may insert.
func firstSeen(runIDs []string, byRun map[string][]events.Event) []string {
	var out []string
	for _, id := range runIDs {
		if slices.ContainsFunc(byRun[id], func(e events.Event) bool { return e.RunSeq == 1 }) {
			out = append(out, id)
		}
	}
	return out
}

// unbussed returns the runs of runIDs projected without bus events (a
// resync, a rebuild): those whose missing row is created ahead of the lock.
func unbussed(runIDs []string, byRun map[string][]events.Event) []string {
	var out []string
	for _, id := range runIDs {
		if len(byRun[id]) == 0 {
			out = append(out, id)
		}
	}
	return out
}

// lockPlan is what one round trip of rowsLock asks.
type lockPlan struct {
	ensure []string // runs whose missing rows it creates first (rowsEnsureSQL)
	fresh  []string // runs whose bus events it checks from runSeq 1 (freshCheckSQL)
	lock   []string // runs whose rows it locks and reads, and checks (busCheckSQL)
}

// locked is what one round trip of rowsLock read.
type locked struct {
	rows   map[string]*runRow     // the rows locked, by run id
	logged map[logKey]logIdentity // busCheckSQL's answer; never nil
	inLog  map[logKey]logIdentity // freshCheckSQL's answer; nil when not asked
}

// adoptFresh gives each run that freshCheckSQL found in the log and that
// has no locked row a fresh row (freshRow), and adds its answer for the
// run's bus events to logged: a fresh row is checked from runSeq 1.
func (l locked) adoptFresh() {
	for k, id := range l.inLog {
		r := l.rows[k.runID]
		if r == nil {
			r = freshRow(k.runID)
			l.rows[k.runID] = r
		}
		if r.fresh {
			l.logged[k] = id
		}
	}
}

// lockRows sends one round trip of rowsLock and reads its answers.
func lockRows(ctx context.Context, tx pgx.Tx, p lockPlan, byRun map[string][]events.Event) (locked, error) {
	b := &pgx.Batch{}
	q := queueLock(b, p, byRun)
	br := tx.SendBatch(ctx, b)
	l, err := q.read(br)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("projector: lock snapshots: %w", cerr)
	}
	return l, err
}

// lockQueued says which of a lock round trip's statements queueLock
// queued, besides rowsLockSQL.
type lockQueued struct{ ensure, fresh, check bool }

// queueLock queues the statements of the round trip p: rowsEnsureSQL
// (when p.ensure has runs), freshCheckSQL (when p.fresh's runs have bus
// events), rowsLockSQL, and busCheckSQL (when p.lock's runs have bus
// events), in that order.
func queueLock(b *pgx.Batch, p lockPlan, byRun map[string][]events.Event) lockQueued {
	var q lockQueued
	if q.ensure = len(p.ensure) > 0; q.ensure {
		b.Queue(rowsEnsureSQL, p.ensure)
	}
	if ids, seqs := busPlaces(p.fresh, byRun); len(ids) > 0 {
		q.fresh = true
		b.Queue(freshCheckSQL, ids, seqs)
	}
	b.Queue(rowsLockSQL, p.lock)
	q.check = queueBusCheck(b, p.lock, byRun)
	return q
}

// busPlaces returns the distinct places (run, runSeq) of the bus events
// of runIDs' runs, as two arrays.
func busPlaces(runIDs []string, byRun map[string][]events.Event) (ids []string, seqs []int64) {
	for _, id := range runIDs {
		var seen []int64
		for _, e := range byRun[id] {
			if !slices.Contains(seen, e.RunSeq) {
				seen = append(seen, e.RunSeq)
				ids, seqs = append(ids, id), append(seqs, e.RunSeq)
			}
		}
	}
	return ids, seqs
}

// read reads the answers of the statements q says were queued.
func (q lockQueued) read(br pgx.BatchResults) (locked, error) {
	l := locked{logged: map[logKey]logIdentity{}}
	var err error
	if q.ensure {
		if _, err := br.Exec(); err != nil {
			return l, fmt.Errorf("projector: create snapshot rows: %w", err)
		}
	}
	if q.fresh {
		if l.inLog, err = readBusCheck(br); err != nil {
			return l, err
		}
	}
	if l.rows, err = readRows(br); err != nil {
		return l, err
	}
	if q.check {
		l.logged, err = readBusCheck(br)
	}
	return l, err
}

// readRows reads rowsLockSQL's answer.
func readRows(br pgx.BatchResults) (map[string]*runRow, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("projector: lock snapshots: %w", err)
	}
	defer rows.Close()
	out := map[string]*runRow{}
	for rows.Next() {
		var id string
		var snap []byte
		var gapSince, lastPersisted *time.Time
		r := &runRow{}
		if err := rows.Scan(&id, &r.ident.TenantID, &r.ident.ProjectID, &r.ident.EnvironmentID, &r.ident.PlanID,
			&r.ident.PlanVersion, &snap, &r.stepsTotal, &r.gapSeen, &gapSince, &r.createdAt, &lastPersisted, &r.lagMs); err != nil {
			return nil, fmt.Errorf("projector: read snapshot: %w", err)
		}
		if err := json.Unmarshal(snap, &r.snap); err != nil {
			return nil, fmt.Errorf("projector: decode snapshot of run %s: %w", id, err)
		}
		r.snap.RunID = id
		r.gapSince = deref(gapSince)
		r.lastPersisted = deref(lastPersisted)
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("projector: read snapshots: %w", err)
	}
	return out, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
