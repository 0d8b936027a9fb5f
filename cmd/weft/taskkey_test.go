package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest"
)

// `weft engine` refuses to start without a task key, naming the flag and
// the variable, and with a key it cannot use; a key from WEFT_TASK_KEY or
// a file, with a previous key after it, is taken.
func TestEngineNeedsATaskKey(t *testing.T) {
	t.Parallel()
	db, ns := weftest.NewDB(t), weftest.NewNATS(t)
	backends := func(extra map[string]string) func(string) string {
		vars := map[string]string{"WEFT_DATABASE_URL": db.URL, "WEFT_NATS_URL": ns.URL(), "WEFT_ENGINE_OPS_ADDR": opsOff}
		for k, v := range extra {
			vars[k] = v
		}
		return envOf(vars)
	}
	engine := func(env func(string) string) error {
		var out, errOut weftest.Buffer
		return run(t.Context(), []string{"engine", "--ensure-streams=false"}, &out, &errOut, env)
	}
	err := engine(backends(nil))
	require.ErrorIs(t, err, errNoTaskKey)
	for _, name := range []string{"--task-key-file", "WEFT_TASK_KEY_FILE", "WEFT_TASK_KEY"} {
		require.ErrorContains(t, err, name)
	}

	short := task.EncodeTaskKey(bytes.Repeat([]byte{1}, task.MinTaskKeyBytes-1))
	require.ErrorIs(t, engine(backends(map[string]string{"WEFT_TASK_KEY": short})), task.ErrTaskKey)
	require.ErrorContains(t, engine(backends(map[string]string{"WEFT_TASK_KEY": "not base64!"})), "WEFT_TASK_KEY")

	file := filepath.Join(t.TempDir(), "task-key")
	cur, prev := bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 32)
	require.NoError(t, os.WriteFile(file, []byte(task.EncodeTaskKey(cur)+"\n"+task.EncodeTaskKey(prev)+"\n"), 0o600))
	err = engine(backends(map[string]string{"WEFT_TASK_KEY_FILE": file, "WEFT_TASK_KEY": task.EncodeTaskKey(cur)}))
	require.ErrorContains(t, err, "not both")

	env := &environment{getenv: envOf(nil)}
	s, err := loadTaskKeys(env, file)
	require.NoError(t, err)
	want, err := task.NewSigner(cur)
	require.NoError(t, err)
	require.Equal(t, want.Sign("r", "s", "1"), s.Sign("r", "s", "1"), "the first key signs")
	old, err := task.NewSigner(prev)
	require.NoError(t, err)
	require.True(t, s.Verify(old.Sign("r", "s", "1"), "r", "s", "1"), "the second key still verifies")
	s, err = loadTaskKeys(&environment{getenv: envOf(map[string]string{"WEFT_TASK_KEY": task.EncodeTaskKey(cur)})}, "")
	require.NoError(t, err)
	require.Equal(t, want.Sign("r", "s", "1"), s.Sign("r", "s", "1"))
	_, err = loadTaskKeys(env, filepath.Join(t.TempDir(), "missing"))
	require.ErrorContains(t, err, "task key file")
}

// `weft dev` makes its task key once, mode 0600, and keeps it: a restarted
// dev stack signs and verifies as before.
func TestDevTaskKeyIsKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := devTaskKeys(dir)
	require.NoError(t, err)
	info, err := os.Stat(filepath.Join(dir, devTaskKeyFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	again, err := devTaskKeys(dir)
	require.NoError(t, err)
	require.Equal(t, first.Sign("r", "s", "1"), again.Sign("r", "s", "1"))
	other, err := devTaskKeys(t.TempDir())
	require.NoError(t, err)
	require.NotEqual(t, first.Sign("r", "s", "1"), other.Sign("r", "s", "1"), "each dev folder has its own random key")

	require.NoError(t, os.WriteFile(filepath.Join(dir, devTaskKeyFile), []byte("garbage!"), 0o600))
	_, err = devTaskKeys(dir)
	require.ErrorIs(t, err, task.ErrTaskKey)
}
