package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
)

// No secret has a default in the file, and none is required: the one-shot
// service secrets makes each on first start unless .env gives it. Every
// use of a secret variable is ${VAR:-}, in the secrets service only, and
// the project loads with none of them set.
func TestNoSecretIsRequired(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("compose.yaml")
	require.NoError(t, err)
	uses := regexp.MustCompile(`\$\{(WEFT_[A-Z_]+)([^}]*)\}`).FindAllStringSubmatch(string(raw), -1)
	seen := map[string]bool{}
	for _, u := range uses {
		if slices.Contains(secretVars, u[1]) {
			seen[u[1]] = true
			require.Equal(t, ":-", u[2], "%s: empty unless given, with no default", u[1])
		}
	}
	require.Len(t, seen, len(secretVars), "every secret may be given in .env")

	p, err := loadProjectEnv(nil)
	require.NoError(t, err, "docker compose up needs no setup step")
	for _, v := range secretVars {
		require.Empty(t, env(service(t, p, "secrets"), v), "%s: made on first start", v)
	}
}

// secrets.sh, the alternative to secrets made on first start, writes every
// secret compose takes into a file of mode 0600, which compose hands to
// the service secrets, and the admin API key it prints, once,
// authenticates against the WEFT_API_KEYS it wrote. Run again, it changes
// nothing and prints no key.
func TestSecretsScript(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), ".env")
	out := runSecrets(t, path)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	token := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(token, "weft_"), "the last line is the token: %q", out)

	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "secrets are the owner's only")
	written, err := dotenv.GetEnvFromFile(nil, []string{path})
	require.NoError(t, err)
	values := map[string]bool{}
	for _, v := range secretVars {
		require.NotEmpty(t, written[v], v)
		require.GreaterOrEqual(t, len(written[v]), 32, v)
		values[written[v]] = true
	}
	require.Len(t, values, len(secretVars), "every secret is its own")
	require.NotContains(t, written["WEFT_API_KEYS"], token, "the file keeps the key's hash only")

	p := loadProjectFile(t, path)
	secrets := service(t, p, "secrets")
	for _, v := range secretVars {
		require.Equal(t, written[v], env(secrets, v), "%s goes to the service that writes the volume", v)
	}
	keys, err := auth.ParseKeys(env(secrets, "WEFT_API_KEYS"))
	require.NoError(t, err)
	principal, err := keys.Authenticate("Bearer " + token)
	require.NoError(t, err, "the keys written into the volume know the printed key")
	require.Equal(t, auth.RoleAdmin, principal.Role)
	require.Equal(t, "default", principal.TenantID)

	before, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Empty(t, runSecrets(t, path), "no new key, so nothing to print")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after), "a second run changes nothing")
}

// runSecrets runs secrets.sh with path and returns its standard output.
func runSecrets(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "sh", "secrets.sh", path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "secrets.sh: %s", stderr.String())
	return string(out)
}

// loadProjectFile loads compose.yaml with the variables of an env file
// only, read as compose reads .env.
func loadProjectFile(t *testing.T, path string) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"compose.yaml"},
		cli.WithWorkingDirectory("."), cli.WithName("weft"), cli.WithEnvFiles(path), cli.WithDotEnv)
	require.NoError(t, err)
	p, err := opts.LoadProject(t.Context())
	require.NoError(t, err)
	return p
}

// `docker compose ps` shows every long-running service healthy: each has a
// healthcheck, maintain's being `weft health` on its ops port, as the
// others' (TestEveryWeftServiceHasAHealthcheckOnItsOpsPort). secrets and
// migrate are the one-shots: they never restart, and every service that
// waits for one waits for its exit 0.
func TestEveryLongRunningServiceIsHealthChecked(t *testing.T) {
	t.Parallel()
	p := loadProject(t)
	for name, svc := range p.Services {
		if name == "migrate" || name == "secrets" {
			require.Nil(t, svc.HealthCheck, "a one-shot has no health")
			require.Equal(t, "no", svc.Restart)
			continue
		}
		require.NotNil(t, svc.HealthCheck, "%s needs a healthcheck", name)
		require.NotEmpty(t, svc.HealthCheck.Test, name)
		require.Equal(t, "unless-stopped", svc.Restart, name)
		for _, oneShot := range []string{"migrate", "secrets"} {
			if dep, ok := svc.DependsOn[oneShot]; ok {
				require.Equal(t, types.ServiceConditionCompletedSuccessfully, dep.Condition, name)
			}
		}
	}
	maintain := service(t, p, "maintain")
	require.NotEmpty(t, env(maintain, "WEFT_MAINTAIN_EVERY"), "it repeats its pass, so its ops listener serves")
	require.Equal(t, types.ServiceConditionCompletedSuccessfully, maintain.DependsOn["migrate"].Condition)
}
