package weftest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Statement is a statement to plan as PREPARE and EXECUTE take it: its
// SQL, its parameters' types ("uuid[], bigint") and literal arguments.
type Statement struct{ SQL, Types, Args string }

// GenericPlans returns, as EXPLAIN prints them, the generic plans of
// statements: the plans Postgres caches for a prepared statement once it
// has run it a few times, made from the table statistics of that moment
// and kept as the tables change. Each statement is prepared after prelude
// in a transaction of its own.
func (db *DB) GenericPlans(t testing.TB, prelude []string, statements ...Statement) string {
	t.Helper()
	ctx := t.Context()
	var out []string
	for i, st := range statements {
		err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			for _, sql := range slices.Concat(prelude, []string{`SET LOCAL plan_cache_mode = force_generic_plan`,
				fmt.Sprintf("PREPARE s%d(%s) AS %s", i, st.Types, st.SQL)}) {
				if _, err := tx.Exec(ctx, sql); err != nil {
					return err
				}
			}
			rows, err := tx.Query(ctx, fmt.Sprintf("EXPLAIN EXECUTE s%d(%s)", i, st.Args), pgx.QueryExecModeSimpleProtocol)
			if err != nil {
				return err
			}
			plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			out = append(out, plan...)
			_, err = tx.Exec(ctx, fmt.Sprintf("DEALLOCATE s%d", i))
			return err
		})
		require.NoError(t, err, st.SQL)
	}
	return strings.Join(out, "\n")
}
