package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/weftrun/weft/pkg/task"
)

// The engine's task keys (docs/security.md, "Task tokens"): the engine
// signs every task with them and accepts only worker results and
// reconciliation lookups that carry the token of their own task. Every
// engine of a deployment needs the same keys, kept across restarts, so
// `weft engine` refuses to start without them rather than make one up.

// taskKeyEnv holds the keys themselves, for deployments that pass secrets
// in the environment (compose): base64 keys, comma-separated, the current
// one first. It is not a flag, so a key never shows on a command line.
const taskKeyEnv = "WEFT_TASK_KEY"

// devTaskKeyFile is `weft dev`'s task key, in its folder.
const devTaskKeyFile = "task-key"

// errNoTaskKey is `weft engine`'s refusal to start without a task key.
var errNoTaskKey = errors.New("no task key: set --task-key-file (WEFT_TASK_KEY_FILE) to a file of base64 keys, " +
	"or WEFT_TASK_KEY to the keys; every engine of a deployment needs the same key, at least 32 random bytes " +
	"(e.g. `head -c 32 /dev/urandom | base64`); see docs/security.md")

// taskKeyFileFlag defines --task-key-file on f.
func taskKeyFileFlag(f *flags) *string {
	return f.string("task-key-file", "WEFT_TASK_KEY_FILE",
		"file of the engine's task keys, base64, one per line, the current one first and the previous ones still accepted after it; "+
			"the keys may instead be set in "+taskKeyEnv+" (comma-separated); required")
}

// loadTaskKeys reads the engine's task keys from file, else from
// WEFT_TASK_KEY. Setting both is an error, and so is setting neither.
func loadTaskKeys(env *environment, file string) (*task.Signer, error) {
	inline := env.getenv(taskKeyEnv)
	switch {
	case file != "" && inline != "":
		return nil, fmt.Errorf("task key: set --task-key-file (WEFT_TASK_KEY_FILE) or %s, not both", taskKeyEnv)
	case file != "":
		data, err := os.ReadFile(file) //nolint:gosec // the operator names the file
		if err != nil {
			return nil, fmt.Errorf("task key file: %w", err)
		}
		s, err := task.ParseTaskKeys(string(data))
		if err != nil {
			return nil, fmt.Errorf("task key file %s: %w", file, err)
		}
		return s, nil
	case inline != "":
		s, err := task.ParseTaskKeys(inline)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", taskKeyEnv, err)
		}
		return s, nil
	}
	return nil, errNoTaskKey
}

// devTaskKeys returns `weft dev`'s task keys, from <dir>/task-key, which
// is written (mode 0600) with a new random key when missing, so that a
// restarted dev stack still accepts the results of its tasks in flight.
func devTaskKeys(dir string) (*task.Signer, error) {
	path := filepath.Join(dir, devTaskKeyFile)
	data, err := os.ReadFile(path) //nolint:gosec // in the dev folder
	if errors.Is(err, fs.ErrNotExist) {
		key, kerr := randomTaskKey()
		if kerr != nil {
			return nil, fmt.Errorf("dev task key: %w", kerr)
		}
		data = []byte(key + "\n")
		err = writeNewFile(path, data)
		if errors.Is(err, fs.ErrExist) { // another dev stack wrote it first
			data, err = os.ReadFile(path) //nolint:gosec // in the dev folder
		}
	}
	if err != nil {
		return nil, fmt.Errorf("dev task key: %w", err)
	}
	s, err := task.ParseTaskKeys(string(data))
	if err != nil {
		return nil, fmt.Errorf("dev task key %s: %w", path, err)
	}
	return s, nil
}

// writeNewFile creates path with mode 0600 and writes data, failing with
// fs.ErrExist when the file exists.
func writeNewFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) //nolint:gosec // in the dev folder
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return err
	}
	return f.Close()
}
