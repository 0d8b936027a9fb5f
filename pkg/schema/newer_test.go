package schema_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/schema"
	"github.com/weftrun/weft/pkg/weftest"
)

// A database a newer Weft migrated is refused, with what to do, and
// nothing is applied; migrating an up-to-date database again is a no-op.
func TestMigrateRefusesANewerDatabase(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	applied, err := schema.Migrate(t.Context(), db.Pool)
	require.NoError(t, err)
	require.Empty(t, applied, "already migrated")

	_, err = db.Pool.Exec(t.Context(), `INSERT INTO weft_schema_migrations (version, name) VALUES (9999, 'from_the_future')`)
	require.NoError(t, err)
	applied, err = schema.Migrate(t.Context(), db.Pool)
	require.ErrorIs(t, err, schema.ErrSchemaNewer)
	require.ErrorContains(t, err, "it has migration 9999_from_the_future")
	require.ErrorContains(t, err, "run a Weft at least as new")
	require.Empty(t, applied)
}
