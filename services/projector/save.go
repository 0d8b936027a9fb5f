package projector

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/events"
)

// saveRowsFrom is the rows a batch's writes store, one array per column
// ($1 to $22), as rowSaveSQL and rowInsertSQL read them: every column a
// write sets, the run id first.
const saveRowsFrom = `unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
	$7::text[], $8::bigint[], $9::integer[], $10::integer[], $11::text[], $12::text[], $13::bigint[],
	$14::timestamptz[], $15::timestamptz[], $16::timestamptz[], $17::bigint[], $18::text[], $19::text[],
	$20::text[], $21::text[], $22::timestamptz[])
	AS u(run_id, tenant_id, project_id, environment_id, plan_id, plan_version, status, last_event_seq,
	     steps_total, steps_done, snapshot, plan_steps, gap_seen, gap_since, created_at, last_persisted,
	     lag_ms, request_id, parent_run_id, labels, rerun_of, ended_at)`

// rowSaveSQL updates the rows of saveRowsFrom, every run of a batch whose
// snapshot changed in one statement, each row found by its key (the
// batch's transaction has locked them, in run id order: rowsLock). A
// NULL plan_steps, run_request_id or parent_run_id keeps the stored one.
const rowSaveSQL = `
UPDATE run_snapshots AS s SET
    tenant_id = u.tenant_id, project_id = u.project_id, environment_id = u.environment_id,
    plan_id = u.plan_id, plan_version = u.plan_version, status = u.status,
    last_event_seq = u.last_event_seq, steps_total = u.steps_total, steps_done = u.steps_done,
    snapshot = u.snapshot::jsonb, plan_steps = coalesce(u.plan_steps::jsonb, s.plan_steps),
    gap_seen_seq = nullif(u.gap_seen, 0), gap_since = u.gap_since, created_at = u.created_at,
    updated_at = clock_timestamp(), last_persisted_at = u.last_persisted, lag_ms = u.lag_ms,
    run_request_id = coalesce(u.request_id, s.run_request_id),
    parent_run_id = coalesce(u.parent_run_id::uuid, s.parent_run_id),
    labels = u.labels::jsonb, rerun_of = u.rerun_of::uuid, ended_at = u.ended_at
FROM ` + saveRowsFrom + `
WHERE s.run_id = u.run_id::uuid`

// rowInsertSQL inserts the fresh rows (freshRow) of saveRowsFrom whole:
// the columns rowSaveSQL sets, from the same arrays, and run_id, so that
// each holds what the update of a placeholder would have left. created_at
// is the column's default where it is NULL (no RunApproved applied), as a
// placeholder's is. A run the log does not have gets no row, as with
// rowsEnsureSQL. It is a plain INSERT: a row someone created meanwhile
// fails it with a unique violation, and with it the batch (rowsLock).
const rowInsertSQL = `
INSERT INTO run_snapshots (run_id, tenant_id, project_id, environment_id, plan_id, plan_version,
    status, last_event_seq, steps_total, steps_done, snapshot, plan_steps, gap_seen_seq, gap_since, created_at,
    updated_at, last_persisted_at, lag_ms, run_request_id, parent_run_id, labels, rerun_of, ended_at)
SELECT u.run_id::uuid, u.tenant_id, u.project_id, u.environment_id, u.plan_id, u.plan_version,
    u.status, u.last_event_seq, u.steps_total, u.steps_done, u.snapshot::jsonb, u.plan_steps::jsonb,
    nullif(u.gap_seen, 0), u.gap_since, coalesce(u.created_at, clock_timestamp()),
    clock_timestamp(), u.last_persisted, u.lag_ms, u.request_id, u.parent_run_id::uuid, u.labels::jsonb,
    u.rerun_of::uuid, u.ended_at
FROM ` + saveRowsFrom + `
WHERE EXISTS (SELECT 1 FROM run_heads h WHERE h.run_id = u.run_id::uuid)`

// saveColumns are saveRowsFrom's arrays, in its order.
type saveColumns struct {
	runID, tenantID, projectID, environmentID, planID, planVersion, status []string
	lastSeq                                                                []int64
	stepsTotal, stepsDone                                                  []int32
	snapshot                                                               []string
	planSteps                                                              []*string
	gapSeen                                                                []int64
	gapSince, createdAt, lastPersisted                                     []*time.Time
	lagMs                                                                  []int64
	requestID, parentRunID, labels, rerunOf                                []*string
	endedAt                                                                []*time.Time
}

// queueSaves queues the writes that store rows, their watermarks
// included, and the columns the runs list filters by that the snapshot
// gives (its labels, the source of a rerun and when it ended): at most two
// statements however many rows, the INSERT of the fresh ones
// (rowInsertSQL) and the UPDATE of the others (rowSaveSQL), from arrays
// laid out alike (but created_at NULL rather than zero for a fresh row): a
// new run's row is written once, and holds byte for byte what the update
// of its placeholder would have written. No rows queues nothing.
func queueSaves(b *pgx.Batch, rows []*runRow) error {
	var fresh, known saveColumns
	for _, r := range rows {
		c := &known
		if r.fresh {
			c = &fresh
		}
		if err := c.add(r); err != nil {
			return err
		}
	}
	for _, q := range []struct {
		sql string
		c   *saveColumns
	}{{rowInsertSQL, &fresh}, {rowSaveSQL, &known}} {
		if len(q.c.runID) > 0 {
			b.Queue(q.sql, q.c.args()...)
		}
	}
	return nil
}

// add appends r's columns.
func (c *saveColumns) add(r *runRow) error {
	snap, err := json.Marshal(r.snap)
	if err != nil {
		return fmt.Errorf("projector: encode snapshot of run %s: %w", r.snap.RunID, err)
	}
	labels, err := labelsColumn(r.snap.Labels)
	if err != nil {
		return fmt.Errorf("projector: encode labels of run %s: %w", r.snap.RunID, err)
	}
	createdAt := &r.createdAt
	if r.fresh {
		createdAt = timeOrNil(r.createdAt)
	}
	c.runID = append(c.runID, r.snap.RunID)
	c.tenantID, c.projectID = append(c.tenantID, r.ident.TenantID), append(c.projectID, r.ident.ProjectID)
	c.environmentID, c.planID = append(c.environmentID, r.ident.EnvironmentID), append(c.planID, r.ident.PlanID)
	c.planVersion, c.status = append(c.planVersion, r.ident.PlanVersion), append(c.status, string(r.snap.Status))
	c.lastSeq = append(c.lastSeq, r.snap.LastEventSeq)
	c.stepsTotal = append(c.stepsTotal, int32(max(r.stepsTotal, len(r.snap.TopSteps())))) //nolint:gosec // a plan's steps are bounded far below 2^31
	c.stepsDone = append(c.stepsDone, int32(r.snap.StepsDone()))                          //nolint:gosec // as stepsTotal
	c.snapshot, c.planSteps = append(c.snapshot, string(snap)), append(c.planSteps, textOrNil(r.planSteps))
	c.gapSeen, c.gapSince = append(c.gapSeen, r.gapSeen), append(c.gapSince, timeOrNil(r.gapSince))
	c.createdAt, c.lastPersisted = append(c.createdAt, createdAt), append(c.lastPersisted, timeOrNil(r.lastPersisted))
	c.lagMs, c.requestID = append(c.lagMs, r.lagMs), append(c.requestID, r.requestID)
	c.parentRunID, c.labels = append(c.parentRunID, r.parentRunID), append(c.labels, labels)
	c.rerunOf, c.endedAt = append(c.rerunOf, rerunOf(r.snap.RerunOf)), append(c.endedAt, r.snap.CompletedAt)
	return nil
}

// args is the statement's arguments, $1 to $22.
func (c *saveColumns) args() []any {
	return []any{c.runID, c.tenantID, c.projectID, c.environmentID, c.planID, c.planVersion, c.status,
		c.lastSeq, c.stepsTotal, c.stepsDone, c.snapshot, c.planSteps, c.gapSeen, c.gapSince, c.createdAt,
		c.lastPersisted, c.lagMs, c.requestID, c.parentRunID, c.labels, c.rerunOf, c.endedAt}
}

// labelsColumn is a run's labels as the labels column holds them, JSON
// text: NULL when it has none.
func labelsColumn(labels map[string]string) (*string, error) {
	if len(labels) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(labels)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
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

// timeOrNil is t, or nil (NULL) for the zero time.
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// textOrNil is b as text, or nil (NULL) when empty.
func textOrNil(b json.RawMessage) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}
