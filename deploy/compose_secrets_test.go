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

	"github.com/weftrun/weft/internal/auth"
)

// secretsHint is what compose says, with the variable's name, when a
// secret is unset.
const secretsHint = "run ./secrets.sh to write .env (docs/deploy.md)"

// No secret has a default in the file: every password, the task key and
// the API keys are required, and compose refuses to load the project
// without any one of them, naming it and saying how to make them.
func TestSecretsAreRequired(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("compose.yaml")
	require.NoError(t, err)
	// Every use of a secret variable is ${VAR:?hint}: no ${VAR:-default},
	// ${VAR-default} or bare ${VAR} that would start with an empty one.
	uses := regexp.MustCompile(`\$\{(WEFT_[A-Z_]+)([^}]*)\}`).FindAllStringSubmatch(string(raw), -1)
	seen := map[string]bool{}
	for _, u := range uses {
		if slices.Contains(secretVars, u[1]) {
			seen[u[1]] = true
			require.Equal(t, ":?"+secretsHint, u[2], "%s must be required, with no default", u[1])
		}
	}
	require.Len(t, seen, len(secretVars), "every secret is used in compose.yaml")

	for _, missing := range secretVars {
		var env []string
		for _, v := range secretVars {
			if v != missing {
				env = append(env, v+"="+secretOf(v))
			}
		}
		_, err := loadProjectEnv(env)
		require.ErrorContains(t, err, "required variable "+missing+" is missing a value: "+secretsHint)
	}
}

// secrets.sh writes every secret compose requires into a file of mode
// 0600, and the admin API key it prints, once, authenticates against the
// WEFT_API_KEYS it wrote. Run again, it changes nothing and prints no key.
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
	for _, name := range []string{"gateway", "projector"} {
		keys, err := auth.ParseKeys(env(service(t, p, name), "WEFT_API_KEYS"))
		require.NoError(t, err, name)
		principal, err := keys.Authenticate("Bearer " + token)
		require.NoError(t, err, "%s knows the printed key", name)
		require.Equal(t, auth.RoleAdmin, principal.Role)
		require.Equal(t, "default", principal.TenantID)
	}
	require.Equal(t, written["WEFT_TASK_KEY"], env(service(t, p, "engine"), "WEFT_TASK_KEY"))

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
// others' (TestEveryWeftServiceHasAHealthcheckOnItsOpsPort). migrate is
// the one one-shot: it never restarts, and every service that waits for it
// waits for its exit 0.
func TestEveryLongRunningServiceIsHealthChecked(t *testing.T) {
	t.Parallel()
	p := loadProject(t)
	for name, svc := range p.Services {
		if name == "migrate" {
			require.Nil(t, svc.HealthCheck, "a one-shot has no health")
			require.Equal(t, "no", svc.Restart)
			continue
		}
		require.NotNil(t, svc.HealthCheck, "%s needs a healthcheck", name)
		require.NotEmpty(t, svc.HealthCheck.Test, name)
		require.Equal(t, "unless-stopped", svc.Restart, name)
		if dep, ok := svc.DependsOn["migrate"]; ok {
			require.Equal(t, types.ServiceConditionCompletedSuccessfully, dep.Condition, name)
		}
	}
	maintain := service(t, p, "maintain")
	require.NotEmpty(t, env(maintain, "WEFT_MAINTAIN_EVERY"), "it repeats its pass, so its ops listener serves")
	require.Equal(t, types.ServiceConditionCompletedSuccessfully, maintain.DependsOn["migrate"].Condition)
}
