package main

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
)

// secretFiles lists the files below dir, by their path there, with their
// contents, checking that each is mode 0600.
func secretFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		require.NoError(t, err)
		rel, err := filepath.Rel(dir, path)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "%s is the owner's only", rel)
		data, err := os.ReadFile(path) //nolint:gosec // the test's folder
		require.NoError(t, err)
		files[rel] = strings.TrimSuffix(string(data), "\n")
		return nil
	}))
	return files
}

// `weft secrets init` writes every secret of the compose topology, each
// its own and random, mode 0600, and prints the new admin key once. Each
// service's folder holds its own: its role's PGPASSFILE line, its NATS
// user's password (which fills its URL), the engine's task key (which
// loads), the gateway's and projector's API keys (which know the printed
// key). Run again, it changes nothing and prints nothing.
func TestSecretsInit(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "secrets")
	r := weft(t, nil, "secrets", "init", "--dir", dir)
	require.NoError(t, r.err, r.errOut)
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	token := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(token, "weft_"), "the last line is the token: %q", r.out)

	files := secretFiles(t, dir)
	values := map[string]bool{}
	for _, s := range topologySecrets() {
		require.GreaterOrEqual(t, len(files[s.file]), 32, s.file)
		values[files[s.file]] = true
	}
	require.Len(t, values, len(topologySecrets()), "every secret is its own")
	require.ElementsMatch(t, []string{
		"postgres/postgres-password", "postgres/pg-migrator-password", "postgres/pg-gateway-password", "postgres/pg-engine-password",
		"postgres/pg-relay-password", "postgres/pg-projector-password",
		"nats/migrate-password", "nats/relay-password", "nats/engine-password", "nats/worker-password",
		"nats/projector-password", "nats/gateway-password", "nats/client-password",
		"migrate/pgpass", "migrate/nats-password", "maintain/pgpass", "relay/pgpass", "relay/nats-password",
		"engine/pgpass", "engine/nats-password", "engine/task-key", "gateway/pgpass", "gateway/nats-password", "gateway/api-keys",
		"projector/pgpass", "projector/nats-password", "projector/api-keys", "worker/nats-password", "client/nats-password",
	}, slices.Collect(maps.Keys(files)))

	require.NotContains(t, files["gateway/api-keys"], token, "only the key's hash is kept")
	require.Equal(t, files["gateway/api-keys"], files["projector/api-keys"])
	keys, err := auth.LoadKeysFile(filepath.Join(dir, "projector/api-keys"))
	require.NoError(t, err)
	principal, err := keys.Authenticate("Bearer " + token)
	require.NoError(t, err)
	require.Equal(t, auth.RoleAdmin, principal.Role)
	require.Equal(t, "default", principal.TenantID)
	_, err = loadTaskKeys(&environment{getenv: envOf(nil)}, filepath.Join(dir, "engine/task-key"))
	require.NoError(t, err)
	for _, r := range secretReaders {
		if r.role != "" {
			require.Equal(t, "*:*:*:weft_"+r.role+":"+files["postgres/pg-"+r.role+"-password"], files[r.dir+"/pgpass"], r.dir)
		}
		if r.natsUser != "" {
			require.Equal(t, files["nats/"+r.natsUser+"-password"], files[r.dir+"/nats-password"], r.dir)
		}
	}
	f := newFlags("test", &environment{getenv: envOf(map[string]string{
		"WEFT_NATS_URL": "nats://engine@nats:4222", "WEFT_NATS_PASSWORD_FILE": filepath.Join(dir, "engine/nats-password"),
	})})
	natsURL := natsFlag(f)
	require.NoError(t, f.parse(nil))
	require.Equal(t, "nats://engine:"+files["nats/engine-password"]+"@nats:4222", *natsURL)

	r = weft(t, nil, "secrets", "init", "--dir", dir)
	require.NoError(t, r.err, r.errOut)
	require.Empty(t, r.out, "no new key, so nothing to print")
	require.Equal(t, files, secretFiles(t, dir), "a second run changes nothing")
}

// A secret its variable gives (deploy/secrets.sh's .env, handed to the
// one-shot service) is written as given; given API keys print no token.
func TestSecretsInitTakesGivenValues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys := "ops default admin " + auth.HashKey("weft_given") + ",ci default operator " + auth.HashKey("weft_ci")
	r := weft(t, map[string]string{"WEFT_NATS_ENGINE_PASSWORD": "given-nats", "WEFT_PG_ENGINE_PASSWORD": `a:b\c`, "WEFT_API_KEYS": keys},
		"secrets", "init", "--dir", dir)
	require.NoError(t, r.err, r.errOut)
	require.Empty(t, r.out, "the keys were given: no token to print")
	files := secretFiles(t, dir)
	require.Equal(t, "given-nats", files["engine/nats-password"])
	require.Equal(t, `*:*:*:weft_engine:a\:b\\c`, files["engine/pgpass"], "escaped for a PGPASSFILE line")
	loaded, err := auth.LoadKeysFile(filepath.Join(dir, "gateway/api-keys"))
	require.NoError(t, err)
	require.Equal(t, 2, loaded.Len())
}

func TestSecretsInitRefusals(t *testing.T) {
	t.Parallel()
	require.ErrorContains(t, weft(t, nil, "secrets", "init").err, "set --dir or WEFT_SECRETS_DIR")
	require.ErrorContains(t, weft(t, nil, "secrets", "init", "--dir", t.TempDir(), "--owner", "nonroot").err, "--owner is uid:gid")
}

// --owner gives every new file to uid:gid (as root: another user's); the
// folders stay the caller's, mode secretsFolderMode, so that a root that
// may chown but not read others' files finds the files again.
func TestSecretsInitOwner(t *testing.T) {
	t.Parallel()
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = 4321, 4321
	}
	dir := t.TempDir()
	r := weft(t, nil, "secrets", "init", "--dir", dir, "--owner", strconv.Itoa(uid)+":"+strconv.Itoa(gid))
	require.NoError(t, r.err, r.errOut)
	n := 0
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		info, err := d.Info()
		require.NoError(t, err)
		st, ok := info.Sys().(*syscall.Stat_t)
		require.True(t, ok)
		if d.IsDir() {
			require.Equal(t, []int{os.Getuid(), os.Getgid()}, []int{int(st.Uid), int(st.Gid)}, path)
			require.Equal(t, secretsFolderMode, info.Mode().Perm(), path)
			return nil
		}
		require.Equal(t, []int{uid, gid}, []int{int(st.Uid), int(st.Gid)}, path)
		n++
		return nil
	}))
	require.Greater(t, n, len(topologySecrets()), "the files")
}

// A folder an older build gave to the owner (mode 0700) is taken back, and
// a missing copy is made from a secret the owner has: as root, the only
// caller that may chown.
func TestSecretsInitTakesFoldersBack(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("chowning to another user needs root")
	}
	dir := t.TempDir()
	owner := []string{"secrets", "init", "--dir", dir, "--owner", "4321:4321"}
	r := weft(t, nil, owner...)
	require.NoError(t, r.err, r.errOut)
	folder := filepath.Join(dir, "postgres")
	require.NoError(t, os.Chown(folder, 4321, 4321))
	require.NoError(t, os.Chmod(folder, 0o700))
	require.NoError(t, os.Remove(filepath.Join(dir, "relay", "pgpass")))

	r = weft(t, nil, owner...)
	require.NoError(t, r.err, r.errOut)
	info, err := os.Stat(folder)
	require.NoError(t, err)
	require.Equal(t, 0, ownerOf(info), "the folder is the caller's again")
	require.Equal(t, secretsFolderMode, info.Mode().Perm())
	pgpass, err := os.Stat(filepath.Join(dir, "relay", "pgpass"))
	require.NoError(t, err, "the missing copy is made again")
	require.Equal(t, 4321, ownerOf(pgpass))
	source, err := os.Stat(filepath.Join(dir, pgPasswordFile("relay")))
	require.NoError(t, err)
	require.Equal(t, 4321, ownerOf(source), "the secret read is the owner's again")
}

// A service given the whole secrets volume where compose.yaml mounts its
// own folder (a Docker Engine before 26 ignores the subpath) is told so;
// its own folder, or a missing file elsewhere, is not.
func TestCheckSecretsMount(t *testing.T) {
	t.Parallel()
	volume := t.TempDir()
	r := weft(t, nil, "secrets", "init", "--dir", volume)
	require.NoError(t, r.err, r.errOut)
	env := func(kv ...string) func(string) string {
		return envOf(map[string]string{kv[0]: kv[1]})
	}
	for _, v := range secretFileVars {
		err := checkSecretsMount(env(v, filepath.Join(volume, "some-file")))
		require.ErrorIs(t, err, errWholeSecretsVolume, v)
		require.ErrorContains(t, err, "Docker Engine 26 or newer is needed for volume subpath")
	}
	require.NoError(t, checkSecretsMount(env("PGPASSFILE", filepath.Join(volume, "migrate", "pgpass"))), "its own folder")
	require.NoError(t, checkSecretsMount(env("PGPASSFILE", filepath.Join(t.TempDir(), "pgpass"))),
		"a missing file, not in the volume's layout")
	require.NoError(t, checkSecretsMount(envOf(nil)), "no secret files")
}

// `weft migrate`, the first weft service of the compose topology, reports
// the whole secrets volume before it connects to anything.
func TestMigrateReportsTheWholeSecretsVolume(t *testing.T) {
	t.Parallel()
	volume := t.TempDir()
	r := weft(t, nil, "secrets", "init", "--dir", volume)
	require.NoError(t, r.err, r.errOut)
	r = weft(t, map[string]string{"PGPASSFILE": filepath.Join(volume, "pgpass"),
		"WEFT_DATABASE_URL": "postgres://weft_migrator@127.0.0.1:1/weft"}, "migrate")
	require.ErrorIs(t, r.err, errWholeSecretsVolume)
}
