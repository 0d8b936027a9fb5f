package outbox

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
)

// An outbox that once held a large backlog keeps its size with a few live
// rows in it. The relay's claim and settlement still probe its indexes
// (queuePlans); without the prelude the claim scans the whole heap, which
// is what it did after a burst of 100,000 parked runs.
func TestRelayProbesIndexesOfABloatedOutbox(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	ctx := t.Context()
	for _, sql := range []string{
		`INSERT INTO outbox (partition, order_key, subject, payload, dedupe_id)
		 SELECT 0, g::text, 'weft.events.x', '\x00', g::text FROM generate_series(1, 20000) g`,
		`ANALYZE outbox`,
		`DELETE FROM outbox`,
		`INSERT INTO outbox (partition, order_key, subject, payload, dedupe_id)
		 SELECT 0, g::text, 'weft.events.x', '\x00', g::text FROM generate_series(1, 5) g`,
		`VACUUM outbox`,
	} {
		_, err := db.Pool.Exec(ctx, sql)
		require.NoError(t, err)
	}
	plans := func(prelude []string) string {
		var out []string
		err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			for _, sql := range prelude {
				if _, err := tx.Exec(ctx, sql); err != nil {
					return err
				}
			}
			for _, q := range []struct {
				sql  string
				args []any
			}{{claimSQL, []any{0, 100}}, {deleteSQL, []any{[]int64{20001, 20002}}}} {
				rows, err := tx.Query(ctx, "EXPLAIN "+q.sql, q.args...)
				if err != nil {
					return err
				}
				plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					return err
				}
				out = append(out, plan...)
			}
			return nil
		})
		require.NoError(t, err)
		return strings.Join(out, "\n")
	}

	text := plans(queuePlans)
	require.NotContains(t, text, "Seq Scan on outbox", text)
	require.Contains(t, text, "outbox_partition_id", text)
	require.Contains(t, plans(nil), "Seq Scan on outbox o", "the claim's plan without queuePlans")
}
