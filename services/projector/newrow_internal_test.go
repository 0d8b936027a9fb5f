package projector

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/store/pipetx"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
)

// queuedSQL returns the statements b holds, in order.
func queuedSQL(b *pgx.Batch) []string {
	out := make([]string, 0, b.Len())
	for _, q := range b.QueuedQueries {
		out = append(out, q.SQL)
	}
	return out
}

// A batch holding a run's first event creates no placeholder row ahead of
// its lock: it checks the run's bus events against the log from runSeq 1,
// and its writes insert the run's row, one statement. A resync, with no
// bus events, still creates the missing rows ahead of the lock.
func TestNewRunRowIsOneInsert(t *testing.T) {
	t.Parallel()
	fresh, known := events.NewRunID(), events.NewRunID()
	byRun := map[string][]events.Event{
		fresh: {{RunID: fresh, RunSeq: 1}, {RunID: fresh, RunSeq: 2}, {RunID: fresh, RunSeq: 2}},
		known: {{RunID: known, RunSeq: 7}},
	}
	runIDs := sortedKeys(byRun)
	b := &pgx.Batch{}
	q := queueLock(b, firstPlan(runIDs, byRun), byRun)
	require.Equal(t, []string{freshCheckSQL, rowsLockSQL, busCheckSQL}, queuedSQL(b), "no placeholder")
	require.Equal(t, lockQueued{fresh: true, check: true}, q)
	require.Equal(t, []any{[]string{fresh, fresh}, []int64{1, 2}}, b.QueuedQueries[0].Arguments,
		"the new run's bus events, each place once")

	w := &pgx.Batch{}
	require.NoError(t, queueSaves(w, []*runRow{freshRow(fresh)}))
	require.Equal(t, []string{rowInsertSQL}, queuedSQL(w), "the new run's writes: one INSERT, no UPDATE")
	w = &pgx.Batch{}
	require.NoError(t, queueSaves(w, []*runRow{{snap: events.RunSnapshot{RunID: known}}, freshRow(fresh),
		{snap: events.RunSnapshot{RunID: events.NewRunID()}}}))
	require.Equal(t, []string{rowInsertSQL, rowSaveSQL}, queuedSQL(w), "a batch's writes: two statements however many runs")
	require.Len(t, w.QueuedQueries[1].Arguments[0], 2, "both known runs in the one UPDATE")
	require.NoError(t, queueSaves(w, nil))
	require.Len(t, w.QueuedQueries, 2, "no rows queue nothing")

	resync := map[string][]events.Event{fresh: nil, known: nil}
	b = &pgx.Batch{}
	q = queueLock(b, firstPlan(runIDs, resync), resync)
	require.Equal(t, []string{rowsEnsureSQL, rowsLockSQL}, queuedSQL(b))
	require.Equal(t, lockQueued{ensure: true}, q)
}

// writeRow stores r in a transaction of its own that it rolls back: after
// a placeholder (rowsEnsureSQL) when placeholder is set, as rowsLock and
// queueSaves do. It returns the row as stored (but updated_at, the time of
// the write), as jsonb text, and the arguments queueSaves gave.
func writeRow(t *testing.T, db *weftest.DB, r runRow, placeholder bool) (string, []any) {
	t.Helper()
	ctx := t.Context()
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	if placeholder {
		_, err := tx.Exec(ctx, rowsEnsureSQL, []string{r.snap.RunID})
		require.NoError(t, err)
	}
	b := &pgx.Batch{}
	require.NoError(t, queueSaves(b, []*runRow{&r}))
	require.NoError(t, tx.SendBatch(ctx, b).Close())
	var row string
	require.NoError(t, tx.QueryRow(ctx, `SELECT (to_jsonb(s) - 'updated_at')::text FROM run_snapshots s WHERE run_id = $1`,
		r.snap.RunID).Scan(&row))
	return row, b.QueuedQueries[0].Arguments
}

// A new run's row, inserted whole, holds column for column what the
// update of its placeholder would have written, from the same arguments:
// the same snapshot, identity, plan, gap, lag and list columns.
func TestFreshRowHoldsWhatTheUpdateWrites(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	id, parent, source, request := events.NewRunID(), events.NewRunID(), events.NewRunID(), "req-1"
	_, err := db.Pool.Exec(t.Context(), `INSERT INTO run_heads (run_id, head_seq) VALUES ($1, 6)`, id)
	require.NoError(t, err)
	at := time.Date(2026, 12, 4, 18, 0, 0, 123456000, time.UTC)
	ended := at.Add(time.Minute)
	r := runRow{
		snap: events.RunSnapshot{RunID: id, Status: events.RunStatusCompleted, LastEventSeq: 6, CompletedAt: &ended,
			Steps:     []events.StepSnapshot{{StepID: "a", Status: events.StepStatusSuccess, LogicalAttemptID: "1"}},
			Artifacts: []events.ArtifactRef{}, Labels: map[string]string{"team": "core"},
			RerunOf: &events.RunRerun{RunID: source, FromStepID: "a"}, Input: json.RawMessage(`{"x":1}`)},
		ident:      api.RunIdentity{TenantID: "acme", ProjectID: "proj", EnvironmentID: "dev", PlanID: "p", PlanVersion: "v1"},
		planSteps:  json.RawMessage(`[{"id":"a","dependsOn":[]},{"id":"b","dependsOn":["a"]}]`),
		stepsTotal: 2, requestID: &request, parentRunID: &parent,
		gapSeen: 9, gapSince: at, createdAt: at, lastPersisted: at, lagMs: 12,
	}
	updated, updateArgs := writeRow(t, db, r, true)
	r.fresh = true
	inserted, insertArgs := writeRow(t, db, r, false)
	require.Equal(t, updateArgs, insertArgs)
	require.Equal(t, updated, inserted)
	require.Contains(t, inserted, `"tenant_id": "acme"`, "the row is the projected one, not a placeholder")
}

// A fresh row that no RunApproved dated gets its created_at from the
// column's default, as a placeholder does; a run the log does not have
// gets no row.
func TestFreshRowDefaultsAndGuard(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	ctx := t.Context()
	id, ghost := events.NewRunID(), events.NewRunID()
	_, err := db.Pool.Exec(ctx, `INSERT INTO run_heads (run_id, head_seq) VALUES ($1, 1)`, id)
	require.NoError(t, err)
	b := &pgx.Batch{}
	require.NoError(t, queueSaves(b, []*runRow{freshRow(id), freshRow(ghost)}))
	require.Len(t, b.QueuedQueries, 1, "one INSERT for both")
	br := db.Pool.SendBatch(ctx, b)
	tag, err := br.Exec()
	require.NoError(t, err)
	require.Equal(t, int64(1), tag.RowsAffected(), "no row for a run the log does not have")
	require.NoError(t, br.Close())

	var createdAt time.Time
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT created_at FROM run_snapshots WHERE run_id = $1`, id).Scan(&createdAt))
	require.Greater(t, createdAt.Year(), 2000, "the column's default, not the zero time")
	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM run_snapshots WHERE run_id = $1`, ghost).Scan(&n))
	require.Zero(t, n)
}

// The statements of a new run's row probe primary keys on cached plans
// with pipetx.KeyPlansSQL, as the batch's others do.
func TestFreshRowStatementsProbeKeysOnCachedPlans(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	id := events.NewRunID()
	ids := "'{" + id + "," + events.NewRunID() + "}'"
	text := db.GenericPlans(t, []string{pipetx.KeyPlansSQL},
		weftest.Statement{SQL: freshCheckSQL, Types: "uuid[], bigint[]", Args: ids + ", '{1,2}'"},
		weftest.Statement{SQL: rowInsertSQL, Types: saveTypes, Args: saveArgs(id)},
		weftest.Statement{SQL: rowSaveSQL, Types: saveTypes, Args: saveArgs(id)})
	for _, scan := range []string{"Seq Scan on run_heads", "Seq Scan on run_events", "Seq Scan on run_snapshots", "Hash"} {
		require.NotContains(t, text, scan, text)
	}
	require.Contains(t, text, "run_heads_pkey", text)
	require.Contains(t, text, "run_snapshots_pkey", text, "the update finds each row by its key")
}

// saveTypes are the parameter types of rowSaveSQL and rowInsertSQL.
const saveTypes = "text[], text[], text[], text[], text[], text[], text[], bigint[], integer[], integer[], text[], " +
	"text[], bigint[], timestamptz[], timestamptz[], timestamptz[], bigint[], text[], text[], text[], text[], timestamptz[]"

// saveArgs are arguments of rowSaveSQL and rowInsertSQL: one row, of run id.
func saveArgs(id string) string {
	return "'{" + id + "}', '{\"\"}', '{\"\"}', '{\"\"}', '{\"\"}', '{\"\"}', '{\"\"}', '{1}', '{0}', '{0}', " +
		"'{\"{}\"}', '{NULL}', '{0}', '{NULL}', '{NULL}', '{NULL}', '{0}', '{NULL}', '{NULL}', '{NULL}', '{NULL}', '{NULL}'"
}
