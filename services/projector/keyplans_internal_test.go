package projector

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/store/pipetx"
	"github.com/weftrun/weft/pkg/events"
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
	statements := []weftest.Statement{
		{SQL: rowsEnsureSQL, Types: "uuid[]", Args: ids},
		{SQL: rowsLockSQL, Types: "uuid[]", Args: ids},
		{SQL: busCheckSQL, Types: "uuid[], bigint[]", Args: ids + ", '{1,2}'"},
	}
	plans := func(prelude ...string) string { return db.GenericPlans(t, prelude, statements...) }

	text := plans(pipetx.KeyPlansSQL)
	for _, scan := range []string{"Seq Scan on run_snapshots", "Seq Scan on run_heads", "Hash"} {
		require.NotContains(t, text, scan, text)
	}
	require.Contains(t, text, "Index Scan using run_snapshots_pkey", text)
	require.Contains(t, plans(), "Seq Scan on run_snapshots", "the plan an empty table gets without pipetx.KeyPlansSQL")
}
