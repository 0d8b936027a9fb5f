package outbox

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
)

// An outbox that once held a large backlog keeps its size with a few live
// rows in it, and Postgres caches the plans it makes from those
// statistics. On such plans the relay's statements still walk the primary
// key of each partition in id order and stop at their limit (queuePlans):
// no scan of the heap, no bitmap of a partition's rows to sort, no key on
// id alone to filter every partition's rows through, and a settlement
// stops at the last of its ids. Without the prelude
// the claim reads a partition's every row and sorts them, or scans the
// heap, which is what it did after a burst of 100,000 parked runs.
func TestRelayWalksThePartitionKeyOfABloatedOutbox(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	ctx := t.Context()
	for _, sql := range []string{
		`INSERT INTO outbox (partition, order_key, subject, payload, dedupe_id)
		 SELECT g % 8, g::text, 'weft.events.x', repeat('x', 700)::bytea, g::text FROM generate_series(1, 30000) g`,
		`DELETE FROM outbox WHERE id < (SELECT max(id) - 3 FROM outbox)`,
		`VACUUM ANALYZE outbox`,
	} {
		_, err := db.Pool.Exec(ctx, sql)
		require.NoError(t, err)
	}
	statements := []weftest.Statement{
		{SQL: claimSQL, Types: "int[], int", Args: "'{0,1,2,3,4,5,6,7}', 100"},
		{SQL: nextDueSQL, Types: "int[]", Args: "'{0,1}'"},
		{SQL: deleteSQL, Types: "int[], bigint, bigint, bigint[]", Args: "'{0,1}', 20001, 20002, '{20001,20002}'"},
		{SQL: retrySQL, Types: "int[], bigint, bigint, bigint[], text[], bigint[]", Args: "'{0}', 20001, 20001, '{20001}', '{x}', '{1}'"},
		{SQL: deadSQL, Types: "int[], bigint, bigint, bigint[], text[]", Args: "'{0}', 20001, 20001, '{20001}', '{x}'"},
	}

	text := db.GenericPlans(t, queuePlans, statements...)
	for _, bad := range []string{"Seq Scan on outbox", "Bitmap", "Sort", "Hash"} {
		require.NotContains(t, text, bad, text)
	}
	require.Contains(t, text, "Index Scan using outbox_pkey on outbox o", text)
	require.Contains(t, text, "CTE Scan on held", text)
	require.Equal(t, 3, strings.Count(text, "(id <= "), "each settlement bounds its walk by its ids: %s", text)
	without := db.GenericPlans(t, nil, statements[0])
	require.Regexp(t, "Seq Scan on outbox|Sort", without, "the claim's plan without queuePlans")
}
