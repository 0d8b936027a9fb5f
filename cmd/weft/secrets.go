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
	"syscall"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/task"
)

// `weft secrets init` writes the secrets of the compose topology
// (deploy/compose.yaml) into a folder, so that a one-shot service can make
// them on first start in an image without a shell. It is deploy/secrets.sh
// as files: the same secrets, each fresh and random unless its variable
// gives it, and a file already there is kept. The folder has a subfolder
// per reader, which compose mounts alone (a volume subpath), so that no
// service reads another's secrets; the files are the --owner's, the
// subfolders the caller's (secretsFolderMode):
//
//	postgres/postgres-password, postgres/pg-<role>-password   the server's
//	nats/<user>-password                                       the server's
//	<service>/pgpass         its role's line of a PGPASSFILE
//	<service>/nats-password  its NATS user's password
//	engine/task-key          the engine's task key
//	gateway/api-keys         the API keys; projector/api-keys the same
//	client/nats-password     the password of the callers' NATS user, client

// pgRoles are the Postgres roles of the topology (deploy/postgres/roles.sql),
// without their weft_ prefix.
var pgRoles = []string{"migrator", "gateway", "engine", "relay", "projector"}

// natsUsers are the NATS users of the topology (deploy/nats.conf).
var natsUsers = []string{"migrate", "relay", "engine", "worker", "projector", "gateway", "client"}

// secretReaders are the folders of the services (and of the NATS callers,
// client) with the Postgres role and the NATS user whose passwords each
// gets; "" for none.
var secretReaders = []struct{ dir, role, natsUser string }{
	{"migrate", "migrator", "migrate"}, {"maintain", "migrator", ""}, {"relay", "relay", "relay"},
	{"engine", "engine", "engine"}, {"gateway", "gateway", "gateway"}, {"projector", "projector", "projector"},
	{"worker", "", "worker"}, {"client", "", "client"},
}

// secret is a secret `weft secrets init` makes, as a file of the folder:
// its path there, the variable that may give its value, and how a new
// value is made.
type secret struct {
	file, envKey string
	generate     func() (string, error)
}

// topologySecrets are the secrets the topology's servers and services
// share, each kept once; the readers' folders get copies.
func topologySecrets() []secret {
	s := []secret{{"postgres/postgres-password", "WEFT_POSTGRES_PASSWORD", randomPassword}}
	for _, r := range pgRoles {
		s = append(s, secret{pgPasswordFile(r), "WEFT_PG_" + strings.ToUpper(r) + "_PASSWORD", randomPassword})
	}
	for _, u := range natsUsers {
		s = append(s, secret{natsPasswordFile(u), "WEFT_NATS_" + strings.ToUpper(u) + "_PASSWORD", randomPassword})
	}
	return append(s, secret{"engine/task-key", taskKeyEnv, randomTaskKey})
}

func pgPasswordFile(role string) string   { return "postgres/pg-" + role + "-password" }
func natsPasswordFile(user string) string { return "nats/" + user + "-password" }

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
// random), each reader's copies (ensureCopies) and the API keys
// (gateway/api-keys and projector/api-keys: WEFT_API_KEYS, else one new
// admin key of tenant default, whose token it prints on stdout, this
// once: only its hash is kept). Run again, it changes nothing and prints
// nothing.
func runSecretsInit(ctx context.Context, env *environment, args []string) error {
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
	if err := w.ensureCopies(); err != nil {
		return err
	}
	token, err := w.ensureAPIKeys(env.getenv("WEFT_API_KEYS"))
	if err != nil {
		return err
	}
	if err := w.chown(); err != nil {
		return err
	}
	env.logger.InfoContext(ctx, "secrets init: done", "dir", w.dir, "written", len(w.written))
	if token == "" {
		return nil
	}
	_, err = fmt.Fprintf(env.stdout, "The admin API key (tenant default), shown this once: keep it, it is stored nowhere:\n%s\n", token)
	return err
}

// secretsFolderMode is the mode of each reader's folder, which stays the
// caller's: a reader with its folder mounted alone (compose's volume
// subpath) opens its files by name and lists none, and the caller, a root
// that may chown but not read others' files (compose gives `secrets`
// CAP_CHOWN only), still finds every file on a later run.
const secretsFolderMode fs.FileMode = 0o711

// secretWriter writes new secret files into dir, each mode 0600 and, with
// an owner, chowned to it once all are written (so that a root without
// the right to read others' files still reads the ones it wrote). Only
// files are given to the owner, never their folders (secretsFolderMode).
type secretWriter struct {
	dir      string
	uid, gid int      // -1: unchanged
	written  []string // the paths of the files to give to the owner
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
	if err := w.mkdir(filepath.Dir(path)); err != nil {
		return false, err
	}
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
	w.written = append(w.written, path)
	return true, nil
}

// ensureCopies writes each reader's pgpass and nats-password, from the
// shared secrets, unless they exist.
func (w *secretWriter) ensureCopies() error {
	for _, r := range secretReaders {
		if r.role != "" {
			_, err := w.ensure(r.dir+"/pgpass", "", func() (string, error) {
				pw, err := w.read(pgPasswordFile(r.role))
				return "*:*:*:weft_" + r.role + ":" + pgpassEscape(pw), err
			})
			if err != nil {
				return err
			}
		}
		if r.natsUser != "" {
			if _, err := w.ensure(r.dir+"/nats-password", "", func() (string, error) { return w.read(natsPasswordFile(r.natsUser)) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// read returns the secret in file, without its final line break. A file
// an earlier run gave to the owner, which the caller may not read, is
// taken back first (chown to the caller) and given to the owner again at
// the end (chown).
func (w *secretWriter) read(file string) (string, error) {
	path := filepath.Join(w.dir, file)
	data, err := os.ReadFile(path) //nolint:gosec // the folder the operator names
	if errors.Is(err, fs.ErrPermission) && w.uid >= 0 {
		if err := os.Chown(path, os.Geteuid(), os.Getegid()); err != nil {
			return "", fmt.Errorf("secrets init: %w", err)
		}
		w.written = append(w.written, path)
		data, err = os.ReadFile(path) //nolint:gosec // as above
	}
	if err != nil {
		return "", fmt.Errorf("secrets init: %w", err)
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}

// mkdir creates dir, mode secretsFolderMode, unless it exists. A folder
// of another user's (an older build gave the folders to the owner, mode
// 0700, which a root without CAP_DAC_OVERRIDE cannot search) is taken
// back: the caller's, mode secretsFolderMode.
func (w *secretWriter) mkdir(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		err = os.Mkdir(dir, secretsFolderMode)
	case err == nil && ownerOf(info) != os.Geteuid():
		err = os.Chown(dir, os.Geteuid(), os.Getegid())
	case err == nil:
		return nil
	}
	if err == nil {
		err = os.Chmod(dir, secretsFolderMode) // exactly, whatever the umask
	}
	if err != nil {
		return fmt.Errorf("secrets init: %w", err)
	}
	return nil
}

// ownerOf returns the uid of the file info describes, -1 when unknown.
func ownerOf(info fs.FileInfo) int {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// chown gives the files written to the owner, if one was named.
func (w *secretWriter) chown() error {
	if w.uid < 0 {
		return nil
	}
	for _, path := range w.written {
		if err := os.Chown(path, w.uid, w.gid); err != nil {
			return fmt.Errorf("secrets init: %w", err)
		}
	}
	return nil
}

// ensureAPIKeys writes api-keys unless it exists: the keys given, one a
// line, or else a new admin key of tenant default, whose token it returns.
func (w *secretWriter) ensureAPIKeys(given string) (string, error) {
	var token string
	wrote, err := w.ensure("gateway/api-keys", strings.ReplaceAll(given, ",", "\n"), func() (string, error) {
		var err error
		if token, err = auth.GenerateToken(); err != nil {
			return "", err
		}
		return "admin default admin " + auth.HashKey(token), nil
	})
	if !wrote {
		token = ""
	}
	if err != nil {
		return "", err
	}
	_, err = w.ensure("projector/api-keys", "", func() (string, error) { return w.read("gateway/api-keys") })
	return token, err
}

// pgpassEscape escapes a password for a line of a PGPASSFILE, where ':'
// separates the fields and '\' escapes.
func pgpassEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(s)
}

// errWholeSecretsVolume is checkSecretsMount's error: a service was given
// the whole secrets volume where compose.yaml mounts its own folder of it.
// Docker Engine before 26 ignores a volume's subpath without an error.
var errWholeSecretsVolume = errors.New("this mount looks like the whole secrets volume: " +
	"Docker Engine 26 or newer is needed for volume subpath (compose.yaml)")

// secretFileVars are the variables that name a service's secret files in
// the compose topology.
var secretFileVars = []string{"PGPASSFILE", "WEFT_NATS_PASSWORD_FILE", "WEFT_TASK_KEY_FILE", "WEFT_API_KEYS_FILE"}

// checkSecretsMount fails with errWholeSecretsVolume when a secret file
// that one of secretFileVars names is missing and its folder has the
// layout of the whole secrets volume (the folders postgres/ and nats/ that
// `weft secrets init` writes) instead of one reader's files. It says
// nothing of any other missing or unreadable file: the code that reads it
// does.
func checkSecretsMount(getenv func(string) string) error {
	for _, v := range secretFileVars {
		path := getenv(v)
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		dir := filepath.Dir(path)
		if isDir(filepath.Join(dir, "postgres")) && isDir(filepath.Join(dir, "nats")) {
			return fmt.Errorf("%s=%s is missing and %s holds postgres/ and nats/: %w", v, path, dir, errWholeSecretsVolume)
		}
	}
	return nil
}

// isDir reports whether path is a folder.
func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}
