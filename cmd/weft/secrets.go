package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weftrun/weft/internal/auth"
	"github.com/weftrun/weft/pkg/task"
)

// `weft secrets init` writes the secrets of the compose topology
// (deploy/compose.yaml) into a folder, one file each, so that a one-shot
// service can make them on first start in an image without a shell. It is
// deploy/secrets.sh as files: the same secrets, each fresh and random
// unless its variable gives it, and a file already there is kept.

// pgRoles are the Postgres roles of the topology (deploy/postgres/roles.sql),
// without their weft_ prefix.
var pgRoles = []string{"migrator", "gateway", "engine", "relay", "projector"}

// natsUsers are the NATS users of the topology (deploy/nats.conf).
var natsUsers = []string{"migrate", "relay", "engine", "worker", "projector", "gateway", "client"}

// secret is one file `weft secrets init` writes: its name in the folder,
// the variable that may give its value, and how a new value is made.
type secret struct {
	file, envKey string
	generate     func() (string, error)
}

// topologySecrets are the secrets of the compose topology, in the order
// they are written: a role's password before its PGPASSFILE line.
func topologySecrets() []secret {
	s := []secret{{"postgres-password", "WEFT_POSTGRES_PASSWORD", randomPassword}}
	for _, r := range pgRoles {
		s = append(s, secret{"pg-" + r + "-password", "WEFT_PG_" + strings.ToUpper(r) + "_PASSWORD", randomPassword})
	}
	for _, u := range natsUsers {
		s = append(s, secret{"nats-" + u + "-password", "WEFT_NATS_" + strings.ToUpper(u) + "_PASSWORD", randomPassword})
	}
	return append(s, secret{"task-key", taskKeyEnv, randomTaskKey})
}

// randomPassword is 24 random bytes in hex: safe in URLs, nats.conf and SQL.
func randomPassword() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// randomTaskKey is a new task key, base64 (docs/security.md, "Task tokens").
func randomTaskKey() (string, error) {
	b := make([]byte, task.MinTaskKeyBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random task key: %w", err)
	}
	return task.EncodeTaskKey(b), nil
}

// secretsOptions are the flags of `weft secrets init`.
type secretsOptions struct {
	dir, owner *string
}

// secretsInitFlags defines the flags of `weft secrets init`.
func secretsInitFlags(env *environment) (*flags, secretsOptions) {
	f := newFlags("secrets init", env)
	return f, secretsOptions{
		dir: f.string("dir", "WEFT_SECRETS_DIR", "folder to write the secrets into, one file each, mode 0600 (required)"),
		owner: f.string("owner", "WEFT_SECRETS_OWNER",
			"uid:gid to give each new file, for services that run as another user (needs the right to chown); empty: the caller's"),
	}
}

func secretsSubcommands() map[string]command {
	return map[string]command{
		"init": {"write the compose topology's secrets into a folder, keeping those there; print a new admin API key once", runSecretsInit},
	}
}

// runSecretsInit is `weft secrets init`: it writes each secret of
// topologySecrets that the folder lacks (from its variable when set, else
// random), each role's PGPASSFILE (pgpass-<role>) and the API keys
// (api-keys: WEFT_API_KEYS, else one new admin key of tenant default,
// whose token it prints on stdout, this once: only its hash is kept).
// Run again, it changes nothing and prints nothing.
func runSecretsInit(_ context.Context, env *environment, args []string) error {
	f, opt := secretsInitFlags(env)
	if err := f.parse(args); err != nil {
		return err
	}
	if *opt.dir == "" {
		return errors.New("secrets init: set --dir or WEFT_SECRETS_DIR")
	}
	w, err := newSecretWriter(*opt.dir, *opt.owner)
	if err != nil {
		return err
	}
	for _, s := range topologySecrets() {
		if _, err := w.ensure(s.file, env.getenv(s.envKey), s.generate); err != nil {
			return err
		}
	}
	for _, r := range pgRoles {
		pw, err := os.ReadFile(filepath.Join(w.dir, "pg-"+r+"-password")) //nolint:gosec // the folder the operator names
		if err != nil {
			return fmt.Errorf("secrets init: %w", err)
		}
		line := "*:*:*:weft_" + r + ":" + pgpassEscape(strings.TrimSpace(string(pw)))
		if _, err := w.ensure("pgpass-"+r, line, nil); err != nil {
			return err
		}
	}
	token, err := w.ensureAPIKeys(env.getenv("WEFT_API_KEYS"))
	if err != nil {
		return err
	}
	env.logger.Info("secrets init: done", "dir", w.dir, "written", w.written)
	if token == "" {
		return nil
	}
	_, err = fmt.Fprintf(env.stdout, "The admin API key (tenant default), shown this once: keep it, it is stored nowhere:\n%s\n", token)
	return err
}

// secretWriter writes new secret files into dir, each mode 0600 and, with
// an owner, chowned to it.
type secretWriter struct {
	dir      string
	uid, gid int // -1: unchanged
	written  int
}

func newSecretWriter(dir, owner string) (*secretWriter, error) {
	w := &secretWriter{dir: dir, uid: -1, gid: -1}
	if owner != "" {
		u, g, ok := strings.Cut(owner, ":")
		uid, errU := strconv.Atoi(u)
		gid, errG := strconv.Atoi(g)
		if !ok || errU != nil || errG != nil || uid < 0 || gid < 0 {
			return nil, fmt.Errorf("secrets init: --owner is uid:gid, numbers, got %q", owner)
		}
		w.uid, w.gid = uid, gid
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("secrets init: %w", err)
	}
	return w, nil
}

// ensure writes file with value, or with generate's when value is empty,
// unless the file exists. It reports whether it wrote the file.
func (w *secretWriter) ensure(file, value string, generate func() (string, error)) (bool, error) {
	path := filepath.Join(w.dir, file)
	if _, err := os.Stat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("secrets init: %w", err)
	}
	if value == "" {
		v, err := generate()
		if err != nil {
			return false, err
		}
		value = v
	}
	if err := writeNewFile(path, []byte(value+"\n")); err != nil {
		return false, fmt.Errorf("secrets init: %w", err)
	}
	if w.uid >= 0 {
		if err := os.Chown(path, w.uid, w.gid); err != nil {
			return false, fmt.Errorf("secrets init: %w", err)
		}
	}
	w.written++
	return true, nil
}

// ensureAPIKeys writes api-keys unless it exists: the keys given, one a
// line, or else a new admin key of tenant default, whose token it returns.
func (w *secretWriter) ensureAPIKeys(given string) (string, error) {
	var token string
	wrote, err := w.ensure("api-keys", strings.ReplaceAll(given, ",", "\n"), func() (string, error) {
		var err error
		if token, err = auth.GenerateToken(); err != nil {
			return "", err
		}
		return "admin default admin " + auth.HashKey(token), nil
	})
	if !wrote {
		token = ""
	}
	return token, err
}

// pgpassEscape escapes a password for a line of a PGPASSFILE, where ':'
// separates the fields and '\' escapes.
func pgpassEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(s)
}
