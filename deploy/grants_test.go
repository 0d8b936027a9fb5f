package deploy

import (
	"os"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
)

// Every table, sequence and function the migrations create is named in
// postgres/grants.sql, granted or listed as the owner's only: a migration
// that adds one must decide who may use it. (topology_test.go checks that
// the grants suffice.)
func TestGrantsNameEverythingTheMigrationsCreate(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	grants, err := os.ReadFile("postgres/grants.sql")
	require.NoError(t, err)
	rows, err := db.Pool.Query(t.Context(), `
		SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S') AND NOT c.relispartition
		UNION
		SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'public'`)
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, names, "run_events", "the migrated schema is listed")
	require.Contains(t, names, "weft_event_append")
	for _, name := range names {
		require.Regexp(t, `\b`+regexp.QuoteMeta(name)+`\b`, string(grants), "grants.sql says who may use %s", name)
	}
}
