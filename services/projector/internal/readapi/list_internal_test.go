package readapi

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
)

// The runs list is spelt so that an index serves it newest first: the
// plan reads the index in order and sorts nothing, on the first page and
// the next ones. Filtered by trigger, the index is run_snapshots_source
// (migration 0012); filtered by project and environment, it is the
// tenant's run_snapshots_list. Sequential scans are off, so that the planner shows
// which index it can use rather than what suits an empty table.
func TestRunsListUsesItsIndex(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	for _, c := range []struct {
		sql, index   string
		project, env string
		trigger      []any
	}{
		{runsAllSQL, "run_snapshots_list", "", "", nil},
		{runsAllSQL, "run_snapshots_list", "shop", "dev", nil},
		{runsByTriggerSQL, "run_snapshots_source", "", "", []any{"orders"}},
		{runsByTriggerSQL, "run_snapshots_source", "shop", "dev", []any{"orders"}},
	} {
		for _, after := range [][2]any{{nil, nil}, {"2026-11-27T10:00:00Z", uuid.Nil.String()}} {
			args := append([]any{pgx.QueryExecModeExec, "acme", nil, false, "", after[0], after[1], 51, c.project, c.env}, c.trigger...)
			var plan []string
			err := pgx.BeginFunc(t.Context(), db.Pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(t.Context(), `SET LOCAL enable_seqscan = off`); err != nil {
					return err
				}
				rows, err := tx.Query(t.Context(), "EXPLAIN "+c.sql, args...)
				if err != nil {
					return err
				}
				plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
				return err
			})
			require.NoError(t, err)
			text := strings.Join(plan, "\n")
			require.Contains(t, text, c.index, text)
			require.NotContains(t, text, "Sort", text)
		}
	}
}
