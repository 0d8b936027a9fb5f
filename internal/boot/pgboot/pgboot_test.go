package pgboot_test

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/pgboot"
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
	require.Equal(t, "hello", readKept(ctx, t, inst.URL()))
}

// TestStartRecoversALostInstance is `weft dev` after a second Ctrl-C: the
// server of the last run was never stopped and holds the folder's lock
// file. The next start on the folder stops it and comes up with its data.
func TestStartRecoversALostInstance(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := sharedTempDir(t)

	lost, err := pgboot.Start(ctx, pgboot.Config{DataDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = lost.Stop(context.Background()) }) // runs last: by then not running
	exec(ctx, t, lost.URL(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('hello')")
	// Lost: never stopped, as after a hard stop of its owner.

	inst, err := pgboot.Start(ctx, pgboot.Config{DataDir: dir})
	require.NoError(t, err, "a start beside a server left running recovers")
	t.Cleanup(func() { _ = inst.Stop(context.Background()) })
	require.Equal(t, "hello", readKept(ctx, t, inst.URL()))
	conn, err := pgx.Connect(ctx, lost.URL())
	if err == nil {
		_ = conn.Close(ctx)
	}
	require.Error(t, err, "the lost server was stopped")
}

// TestStartRemovesAStaleLockFile: a lock file naming a live process that is
// not a postgres of the folder (its PID reused, as after a reboot) is
// stale. PostgreSQL alone refuses to start beside it when that process
// runs as the server's user.
func TestStartRemovesAStaleLockFile(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := sharedTempDir(t)

	inst, err := pgboot.Start(ctx, pgboot.Config{DataDir: dir})
	require.NoError(t, err)
	exec(ctx, t, inst.URL(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('hello')")
	require.NoError(t, inst.Stop(ctx))

	pgData := filepath.Join(dir, "data") // pgboot's layout: the cluster, beside the server's log
	st, err := os.Stat(pgData)
	require.NoError(t, err)
	owner := st.Sys().(*syscall.Stat_t)
	other := otherProcess(t, owner.Uid, owner.Gid)
	pidFile := filepath.Join(pgData, "postmaster.pid")
	lock := fmt.Sprintf("%d\n%s\n0\n5432\n\n127.0.0.1\n", other, pgData)
	require.NoError(t, os.WriteFile(pidFile, []byte(lock), 0o600))
	require.NoError(t, os.Lchown(pidFile, int(owner.Uid), int(owner.Gid)))

	inst, err = pgboot.Start(ctx, pgboot.Config{DataDir: dir})
	require.NoError(t, err, "a stale lock file does not stop a start")
	t.Cleanup(func() { _ = inst.Stop(context.Background()) })
	require.Equal(t, "hello", readKept(ctx, t, inst.URL()))
}

// otherProcess starts a process that is not a postgres, as uid when the
// test may switch to it, and returns its PID; the test's end kills it.
func otherProcess(t *testing.T, uid, gid uint32) int {
	t.Helper()
	cmd := osexec.Command("sleep", "600")
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

func readKept(ctx context.Context, t *testing.T, url string) string {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	var v string
	require.NoError(t, conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v))
	return v
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

// TestStartFromAPrivateFolder is `make run` of a clone in /root: a folder
// of mode 0700 above the data folder. As root, the server runs as the
// postgres user, who cannot enter it: the cluster lives in a folder of
// that user's under RelocateRoot, recorded in the data folder, and the next
// start finds it there with its data. As any other user the server runs
// as that user, who owns the folder, and the cluster stays in place.
func TestStartFromAPrivateFolder(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := filepath.Dir(sharedTempDir(t))
	home := filepath.Join(base, "root")
	require.NoError(t, os.Mkdir(home, 0o700))
	dir := filepath.Join(home, "clone", ".weft", "dev", "pg")
	spare := filepath.Join(base, "spare")
	require.NoError(t, os.Mkdir(spare, 0o755))
	cfg := pgboot.Config{DataDir: dir, RelocateRoot: spare}

	inst, err := pgboot.Start(ctx, cfg)
	require.NoError(t, err)
	exec(ctx, t, inst.URL(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('hello')")
	require.NoError(t, inst.Stop(ctx))
	first := inst.DataDir()
	if os.Geteuid() == 0 {
		require.Equal(t, spare, filepath.Dir(first), "as root the cluster is relocated")
		record, err := os.ReadFile(filepath.Join(dir, "relocated-to"))
		require.NoError(t, err)
		require.Equal(t, first+"\n", string(record))
		st, err := os.Stat(first)
		require.NoError(t, err)
		pg, err := user.Lookup("postgres")
		require.NoError(t, err)
		require.Equal(t, pg.Uid, fmt.Sprint(st.Sys().(*syscall.Stat_t).Uid), "the postgres user owns it")
	} else {
		require.Equal(t, dir, first, "as its owner the cluster stays in place")
	}

	inst, err = pgboot.Start(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = inst.Stop(context.Background()) })
	require.Equal(t, first, inst.DataDir(), "the next start finds the same cluster")
	require.Equal(t, "hello", readKept(ctx, t, inst.URL()))
	if os.Geteuid() != 0 {
		return
	}

	// Deleting the data folder starts over: the cluster it left under
	// RelocateRoot is replaced, not left behind beside a new one.
	require.NoError(t, inst.Stop(ctx))
	require.NoError(t, os.RemoveAll(dir))
	inst, err = pgboot.Start(ctx, cfg)
	require.NoError(t, err)
	require.Equal(t, first, inst.DataDir(), "the same path, its own folder")
	conn, err := pgx.Connect(ctx, inst.URL())
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	var kept bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT to_regclass('kept') IS NOT NULL").Scan(&kept))
	require.False(t, kept, "a fresh cluster")
	entries, err := os.ReadDir(spare)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing left behind under RelocateRoot")
}

// TestSettingsAreSetOnEveryStart starts a server with a setting of its
// own and reads it back, and again after a restart.
func TestSettingsAreSetOnEveryStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := pgboot.Config{DataDir: sharedTempDir(t), Settings: []string{"work_mem=7MB"}}
	for range 2 {
		inst, err := pgboot.Start(ctx, cfg)
		require.NoError(t, err)
		conn, err := pgx.Connect(ctx, inst.URL())
		require.NoError(t, err)
		var workMem string
		require.NoError(t, conn.QueryRow(ctx, "SHOW work_mem").Scan(&workMem))
		require.NoError(t, conn.Close(ctx))
		require.Equal(t, "7MB", workMem)
		require.NoError(t, inst.Stop(ctx))
	}
}
