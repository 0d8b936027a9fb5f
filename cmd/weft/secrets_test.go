package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/auth"
)

// secretFiles lists the files of dir with their contents.
func secretFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	files := map[string]string{}
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "%s is the owner's only", e.Name())
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		files[e.Name()] = strings.TrimSuffix(string(data), "\n")
	}
	return files
}

// `weft secrets init` writes every secret of the compose topology, each
// its own and random, mode 0600, and prints the new admin key once: the
// api-keys file knows it, the task key file loads, each role's
// PGPASSFILE holds its password and each NATS password file fills its
// user's URL. Run again, it changes nothing and prints nothing.
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
	require.Len(t, files, len(topologySecrets())+len(pgRoles)+1, "the secrets, a pgpass file per role and the API keys")
	require.NotContains(t, files["api-keys"], token, "only the key's hash is kept")

	keys, err := auth.LoadKeysFile(filepath.Join(dir, "api-keys"))
	require.NoError(t, err)
	principal, err := keys.Authenticate("Bearer " + token)
	require.NoError(t, err)
	require.Equal(t, auth.RoleAdmin, principal.Role)
	require.Equal(t, "default", principal.TenantID)
	_, err = loadTaskKeys(&environment{getenv: envOf(nil)}, filepath.Join(dir, "task-key"))
	require.NoError(t, err)
	for _, role := range pgRoles {
		require.Equal(t, "*:*:*:weft_"+role+":"+files["pg-"+role+"-password"], files["pgpass-"+role], role)
	}
	f := newFlags("test", &environment{getenv: envOf(map[string]string{
		"WEFT_NATS_URL": "nats://engine@nats:4222", "WEFT_NATS_PASSWORD_FILE": filepath.Join(dir, "nats-engine-password"),
	})})
	natsURL := natsFlag(f)
	require.NoError(t, f.parse(nil))
	require.Equal(t, "nats://engine:"+files["nats-engine-password"]+"@nats:4222", *natsURL)

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
	require.Equal(t, "given-nats", files["nats-engine-password"])
	require.Equal(t, `*:*:*:weft_engine:a\:b\\c`, files["pgpass-engine"], "escaped for a PGPASSFILE line")
	loaded, err := auth.LoadKeysFile(filepath.Join(dir, "api-keys"))
	require.NoError(t, err)
	require.Equal(t, 2, loaded.Len())
}

func TestSecretsInitRefusals(t *testing.T) {
	t.Parallel()
	require.ErrorContains(t, weft(t, nil, "secrets", "init").err, "set --dir or WEFT_SECRETS_DIR")
	require.ErrorContains(t, weft(t, nil, "secrets", "init", "--dir", t.TempDir(), "--owner", "nonroot").err, "--owner is uid:gid")
}
