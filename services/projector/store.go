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
}

// stale reports whether the run has an open gap.
func (r *runRow) stale() bool { return r.gapSeen > 0 }

// rowsEnsureSQL creates the missing rows of a batch's runs that the log
// has (run_heads: a forged message names no new row into being), in run id
// order, in the batch's transaction. A new row is invisible to every
// reader until a batch fills it in: its tenant is empty. Two batches
// cannot deadlock: each inserts its new rows and then locks all its rows
// in run id order, an insert waits only for another batch's uncommitted
// insert of the same run, and a lock only for a batch that has finished
// inserting.
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

// rowsLock creates the missing rows of runIDs (those the log has), which
// must be sorted and distinct, then locks and reads them, and reads what
// the log holds where byRun's bus events past the watermarks claim to be
// (busCheckSQL). A row never projected has an empty snapshot of its run; a
// run the log does not have has no row.
//
// Creating rows costs an INSERT per batch that most batches do not need:
// a run's row exists from its first batch on. So the first round trip
// creates only the rows of the runs that may be new (newRuns), and locks
// every row. A run whose row it did not find (its first event came back
// late, or the log was read without the bus) gets a second round trip that
// creates and locks its row out of run id order; two projectors doing that
// for the same run at once can deadlock, which Postgres breaks by failing
// one batch, whose messages come back.
func rowsLock(ctx context.Context, tx pgx.Tx, runIDs []string, byRun map[string][]events.Event) (map[string]*runRow, map[logKey]logIdentity, error) {
	rows, logged, err := lockRows(ctx, tx, newRuns(runIDs, byRun), runIDs, byRun)
	if err != nil {
		return nil, nil, err
	}
	var missing []string
	for _, id := range runIDs {
		if rows[id] == nil {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return rows, logged, nil
	}
	more, moreLogged, err := lockRows(ctx, tx, missing, missing, byRun)
	if err != nil {
		return nil, nil, err
	}
	maps.Copy(rows, more)
	if logged == nil {
		logged = moreLogged
	}
	maps.Copy(logged, moreLogged)
	return rows, logged, nil
}

// newRuns returns the runs of runIDs whose row the batch may have to
// create: those whose bus events include their first (runSeq 1), and those
// projected without bus events (a resync, a rebuild).
func newRuns(runIDs []string, byRun map[string][]events.Event) []string {
	var out []string
	for _, id := range runIDs {
		evs := byRun[id]
		if len(evs) == 0 || slices.ContainsFunc(evs, func(e events.Event) bool { return e.RunSeq == 1 }) {
			out = append(out, id)
		}
	}
	return out
}

// lockRows is one round trip of rowsLock: it creates the missing rows of
// create (when any), locks and reads the rows of lock, and checks lock's
// bus events.
func lockRows(ctx context.Context, tx pgx.Tx, create, lock []string, byRun map[string][]events.Event) (map[string]*runRow, map[logKey]logIdentity, error) {
	b := &pgx.Batch{}
	if len(create) > 0 {
		b.Queue(rowsEnsureSQL, create)
	}
	b.Queue(rowsLockSQL, lock)
	check := queueBusCheck(b, lock, byRun)
	br := tx.SendBatch(ctx, b)
	out, err := readRows(br, len(create) > 0)
	var logged map[logKey]logIdentity
	if err == nil && check {
		logged, err = readBusCheck(br)
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("projector: lock snapshots: %w", cerr)
	}
	return out, logged, err
}

// readRows reads the results of lockRows' batch: the rows it created
// (when created), then the rows it locked.
func readRows(br pgx.BatchResults, created bool) (map[string]*runRow, error) {
	if created {
		if _, err := br.Exec(); err != nil {
			return nil, fmt.Errorf("projector: create snapshot rows: %w", err)
		}
	}
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

const rowSaveSQL = `
UPDATE run_snapshots SET
    tenant_id = $2, project_id = $3, environment_id = $4, plan_id = $5, plan_version = $6,
    status = $7, last_event_seq = $8, steps_total = $9, steps_done = $10, snapshot = $11,
    plan_steps = coalesce($12, plan_steps), gap_seen_seq = nullif($13, 0), gap_since = $14, created_at = $15,
    updated_at = clock_timestamp(), last_persisted_at = $16, lag_ms = $17,
    run_request_id = coalesce($18, run_request_id), parent_run_id = coalesce($19::uuid, parent_run_id),
    labels = $20, rerun_of = $21::uuid, ended_at = $22
WHERE run_id = $1`

// queueSave queues the UPDATE that stores r, its watermark included, and
// the columns the runs list filters by that the snapshot gives: its
// labels, the source of a rerun and when it ended (completedAt).
func queueSave(b *pgx.Batch, r *runRow) error {
	snap, err := json.Marshal(r.snap)
	if err != nil {
		return fmt.Errorf("projector: encode snapshot of run %s: %w", r.snap.RunID, err)
	}
	b.Queue(rowSaveSQL, r.snap.RunID, r.ident.TenantID, r.ident.ProjectID, r.ident.EnvironmentID,
		r.ident.PlanID, r.ident.PlanVersion, string(r.snap.Status), r.snap.LastEventSeq,
		max(r.stepsTotal, len(r.snap.TopSteps())), r.snap.StepsDone(),
		snap, nullJSON(r.planSteps), r.gapSeen, nullTime(r.gapSince), r.createdAt,
		nullTime(r.lastPersisted), r.lagMs, r.requestID, r.parentRunID,
		nullLabels(r.snap.Labels), rerunOf(r.snap.RerunOf), r.snap.CompletedAt)
	return nil
}

// nullLabels is a run's labels as the labels column holds them: NULL
// when it has none.
func nullLabels(labels map[string]string) any {
	if len(labels) == 0 {
		return nil
	}
	return labels
}

// rerunOf is the run id of a rerun's source, canonical, as the rerun_of
// column holds it; nil for a run that is not a rerun, or whose source's id
// is not a UUID (as parentRunID).
func rerunOf(r *events.RunRerun) *string {
	if r == nil {
		return nil
	}
	return canonicalRunID(r.RunID)
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

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return []byte(b)
}
