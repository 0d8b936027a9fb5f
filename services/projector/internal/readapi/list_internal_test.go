package readapi

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
)

// The runs list is spelt so that an index serves it newest first: the
// plan reads the index in order and sorts nothing, on the first page and
// the next ones. Filtered by trigger, the index is run_snapshots_source
// (migration 0012); by parent, run_snapshots_parent (migration 0020);
// filtered by project and environment, it is the tenant's
// run_snapshots_list. Sequential scans are off, so that the planner shows
// which index it can use rather than what suits an empty table.
func TestRunsListUsesItsIndex(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	parent := uuid.NewString()
	for _, c := range []struct {
		q     listQuery
		index string
	}{
		{listQuery{}, "run_snapshots_list"},
		{listQuery{project: "shop", env: "dev"}, "run_snapshots_list"},
		{listQuery{trigger: "orders"}, "run_snapshots_source"},
		{listQuery{trigger: "orders", project: "shop", env: "dev"}, "run_snapshots_source"},
		{listQuery{parent: parent}, "run_snapshots_parent"},
		{listQuery{parent: parent, project: "shop", env: "dev", plan: "billing",
			statuses: []string{"FAILED"}, stale: true}, "run_snapshots_parent"},
	} {
		for _, after := range []*cursor{nil, {CreatedAt: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC), RunID: uuid.Nil.String()}} {
			c.q.tenant, c.q.limit, c.q.after = "acme", DefaultListLimit, after
			text := explainWith(t, db, c.q, true)
			require.Contains(t, text, c.index, text)
			require.NotContains(t, text, "Sort", text)
			require.NotContains(t, text, "Seq Scan", text)
		}
	}
}

// explainWith returns the plan of q's list query, with sequential scans
// off when noSeqScan.
func explainWith(t *testing.T, db *weftest.DB, q listQuery, noSeqScan bool) string {
	t.Helper()
	sql, args := q.listSQL()
	var plan []string
	err := pgx.BeginFunc(t.Context(), db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(t.Context(), `SELECT set_config('enable_seqscan', $1, true)`, map[bool]string{true: "off", false: "on"}[noSeqScan]); err != nil {
			return err
		}
		rows, err := tx.Query(t.Context(), "EXPLAIN "+sql, append([]any{pgx.QueryExecModeExec}, args...)...)
		if err != nil {
			return err
		}
		plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	require.NoError(t, err)
	return strings.Join(plan, "\n")
}

// On 100,000 analysed snapshots, a tenth of them children of 100 parents,
// the planner, free to scan sequentially, lists a parent's children
// through run_snapshots_parent, in its order; combined with filters it
// estimates to keep a row or two, through the index still (it may then
// sort the parent's few children).
func TestRunsListByParentUsesItsIndexAtScale(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	_, err := db.Pool.Exec(t.Context(), `
INSERT INTO run_snapshots (run_id, tenant_id, plan_id, status, last_event_seq, snapshot, created_at, parent_run_id)
SELECT gen_random_uuid(), CASE WHEN i % 2 = 0 THEN 'acme' ELSE 'other' END, 'p' || (i % 7), 'COMPLETED', 1, '{}',
       now() - i * interval '1 second',
       CASE WHEN i % 10 = 0 THEN ('00000000-0000-7000-8000-' || lpad((i % 100)::text, 12, '0'))::uuid END
FROM generate_series(1, 100000) AS i;
ANALYZE run_snapshots`)
	require.NoError(t, err)
	parent := "00000000-0000-7000-8000-000000000020"
	for _, c := range []struct {
		q      listQuery
		sorted bool // the index's order serves the list
	}{
		{listQuery{parent: parent}, true},
		{listQuery{parent: parent, plan: "p3", statuses: []string{"COMPLETED"}, project: "shop"}, false},
	} {
		for _, after := range []*cursor{nil, {CreatedAt: time.Now().Add(-time.Hour), RunID: uuid.Nil.String()}} {
			c.q.tenant, c.q.limit, c.q.after = "acme", DefaultListLimit, after
			text := explainWith(t, db, c.q, false)
			require.Contains(t, text, "run_snapshots_parent", text)
			require.NotContains(t, text, "Seq Scan", text)
			if c.sorted {
				require.NotContains(t, text, "Sort", text)
			}
		}
	}
}
