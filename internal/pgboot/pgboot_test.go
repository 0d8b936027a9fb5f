package pgboot_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/pgboot"
)

// TestPrivateInstanceKeepsDataAcrossRestart starts a private server in a
// folder, writes a row, stops it, starts it again from the same folder and
// reads the row back: what `weft dev` relies on.
func TestPrivateInstanceKeepsDataAcrossRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := sharedTempDir(t) // t.TempDir() is private to root; the postgres user must reach the folder

	inst, err := pgboot.Start(ctx, pgboot.Config{DataDir: dir})
	require.NoError(t, err)
	exec(ctx, t, inst.URL(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('hello')")
	require.NoError(t, inst.Stop(ctx))

	inst, err = pgboot.Start(ctx, pgboot.Config{DataDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = inst.Stop(context.Background()) })
	conn, err := pgx.Connect(ctx, inst.URL())
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	var v string
	require.NoError(t, conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v))
	require.Equal(t, "hello", v)
}

func TestMissingBinariesSaysWhatToInstall(t *testing.T) {
	t.Parallel()
	_, err := pgboot.Start(context.Background(), pgboot.Config{BinDir: t.TempDir(), DataDir: t.TempDir()})
	require.ErrorIs(t, err, pgboot.ErrNoBinaries)
	require.Contains(t, err.Error(), "apt-get install postgresql")
}

func sharedTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "weft-pgboot-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "pg")
}

func exec(ctx context.Context, t *testing.T, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, sql)
	require.NoError(t, err)
}
