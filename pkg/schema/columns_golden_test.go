package schema_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// columnsSQL lists every column of Weft's tables (partitions left out:
// they mirror run_events) with its type, nullability and default.
const columnsSQL = `
SELECT c.table_name, c.column_name, c.data_type, c.is_nullable, coalesce(c.column_default, '')
FROM information_schema.columns c
JOIN pg_class t ON t.relname = c.table_name AND t.relnamespace = 'public'::regnamespace
WHERE c.table_schema = 'public' AND NOT t.relispartition AND t.relkind IN ('r', 'p')
ORDER BY c.table_name, c.ordinal_position`

// The tables are persisted records whose format is their columns: a
// migration that renames, retypes or drops a column, or changes a
// default, changes what an older build reads or writes during a rolling
// upgrade, and must fail here (docs/persisted-format.md). A new column or
// table is additive: regenerate with WEFT_UPDATE_GOLDEN=1 and review the
// diff, in which no existing line may change.
func TestSchemaColumnsGolden(t *testing.T) {
	db := weftest.NewDB(t)
	rows, err := db.Pool.Query(t.Context(), columnsSQL)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var table, column, typ, nullable, def string
		err := r.Scan(&table, &column, &typ, &nullable, &def)
		null := "not null"
		if nullable == "YES" {
			null = "null"
		}
		if def != "" {
			def = " default " + def
		}
		return fmt.Sprintf("%s.%s %s %s%s", table, column, typ, null, def), err
	})
	require.NoError(t, err)
	require.NotEmpty(t, lines)
	goldentest.Compare(t, "testdata/columns.golden", []byte(strings.Join(lines, "\n")))
}

// unversioned are the tables without a format version column, and why.
var unversioned = map[string]string{
	"run_heads":        "a counter (the run's head runSeq), derived from run_events and rebuilt by nothing but appends",
	"outbox_wake":      "the relay's wake-up state, rewritten on every wake-up; it holds no record",
	"engine_members":   "the running engines' heartbeats, rewritten every second; a row lives as long as its engine",
	"engine_run_keys":  "the concurrency slots a started run holds: a pair of ids that lives as long as the run, rebuilt by nothing but its start",
	"engine_key_wakes": "a slot's wake-up, deleted once its queue is served; it holds no record",
	"engine_key_turns": "a GROUP_ROUND_ROBIN queue's last group, rewritten at each of its starts",
}

// Every other table carries its rows' format version (version, or
// schema_version for run_events, format_version for run_checkpoints).
func TestEveryTableCarriesAVersion(t *testing.T) {
	db := weftest.NewDB(t)
	rows, err := db.Pool.Query(t.Context(), `
		SELECT t.relname FROM pg_class t
		WHERE t.relnamespace = 'public'::regnamespace AND t.relkind IN ('r', 'p') AND NOT t.relispartition
		  AND NOT EXISTS (SELECT 1 FROM information_schema.columns c
		                  WHERE c.table_schema = 'public' AND c.table_name = t.relname
		                    AND c.column_name IN ('version', 'schema_version', 'format_version'))
		ORDER BY 1`)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	var want []string
	for table := range unversioned {
		want = append(want, table)
	}
	require.ElementsMatch(t, want, tables, "a new table needs a version column, or a reason in unversioned")
}
