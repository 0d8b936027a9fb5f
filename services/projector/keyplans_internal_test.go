package projector

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/pipetx"
	"github.com/weftrun/weft/pkg/weftest"
)

// A batch's statements probe the primary keys even on the plans Postgres
// makes for empty tables and then caches (generic plans): with
// pipetx.KeyPlansSQL, none scans or hashes run_snapshots or run_heads. Without
// it, the same plan scans run_snapshots, which is what a batch kept
// doing once the table had grown (pipetx.KeyPlansSQL).
func TestBatchStatementsProbeKeysOnCachedPlans(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	ids := "'{" + events.NewRunID() + "," + events.NewRunID() + "}'"
	statements := []struct{ sql, types, args string }{
		{rowsEnsureSQL, "uuid[]", ids},
		{rowsLockSQL, "uuid[]", ids},
		{busCheckSQL, "uuid[], bigint[]", ids + ", '{1,2}'"},
	}
	// plans returns the generic plans, the ones Postgres caches, of the
	// statements, each prepared after prelude in a transaction of its own.
	plans := func(prelude ...string) string {
		var out []string
		for i, st := range statements {
			err := pgx.BeginFunc(t.Context(), db.Pool, func(tx pgx.Tx) error {
				for _, sql := range append(prelude, `SET LOCAL plan_cache_mode = force_generic_plan`,
					fmt.Sprintf("PREPARE s%d(%s) AS %s", i, st.types, st.sql)) {
					if _, err := tx.Exec(t.Context(), sql); err != nil {
						return err
					}
				}
				rows, err := tx.Query(t.Context(), fmt.Sprintf("EXPLAIN EXECUTE s%d(%s)", i, st.args), pgx.QueryExecModeSimpleProtocol)
				if err != nil {
					return err
				}
				plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
				out = append(out, plan...)
				if err != nil {
					return err
				}
				_, err = tx.Exec(t.Context(), fmt.Sprintf("DEALLOCATE s%d", i))
				return err
			})
			require.NoError(t, err)
		}
		return strings.Join(out, "\n")
	}

	text := plans(pipetx.KeyPlansSQL)
	for _, scan := range []string{"Seq Scan on run_snapshots", "Seq Scan on run_heads", "Hash"} {
		require.NotContains(t, text, scan, text)
	}
	require.Contains(t, text, "Index Scan using run_snapshots_pkey", text)
	require.Contains(t, plans(), "Seq Scan on run_snapshots", "the plan an empty table gets without pipetx.KeyPlansSQL")
}
