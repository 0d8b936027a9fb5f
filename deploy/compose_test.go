// Package deploy holds the compose topology. There is no Docker engine in CI,
// so this test loads deploy/compose.yaml with compose-go, the library Docker
// Compose itself uses, and checks its shape; topology_test.go runs the same
// topology as local processes.
package deploy

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/require"
)

// weftServices are the long-running services of the topology that use
// NATS, each run from the weft image, with the default port of its ops
// listener (cmd/weft/ops.go).
var weftServices = map[string]string{
	"relay": "9185", "engine": "9183", "gateway": "9181", "projector": "9182", "worker": "9184",
}

// opsPorts are the default ops ports of every long-running weft service:
// weftServices and maintain, which needs Postgres only.
func opsPorts() map[string]string {
	ports := maps.Clone(weftServices)
	ports["maintain"] = "9186"
	return ports
}

// secretVars are the secrets compose.yaml takes from the environment
// (.env, as deploy/secrets.sh writes it), each set to a distinct value so
// the test can see where each one goes: to the one-shot service secrets
// only, which writes them into the volume on first start.
var secretVars = []string{
	"WEFT_POSTGRES_PASSWORD",
	"WEFT_PG_MIGRATOR_PASSWORD", "WEFT_PG_GATEWAY_PASSWORD", "WEFT_PG_ENGINE_PASSWORD",
	"WEFT_PG_RELAY_PASSWORD", "WEFT_PG_PROJECTOR_PASSWORD",
	"WEFT_NATS_MIGRATE_PASSWORD", "WEFT_NATS_RELAY_PASSWORD", "WEFT_NATS_ENGINE_PASSWORD",
	"WEFT_NATS_WORKER_PASSWORD", "WEFT_NATS_PROJECTOR_PASSWORD", "WEFT_NATS_GATEWAY_PASSWORD",
	"WEFT_NATS_CLIENT_PASSWORD", "WEFT_TASK_KEY", "WEFT_API_KEYS",
}

func secretOf(v string) string { return "s3cret-" + strings.ToLower(v) }

// loadProject loads compose.yaml with the password variables set and extra
// ("KEY=value") added to the environment.
func loadProject(t *testing.T, extra ...string) *types.Project {
	t.Helper()
	return loadFiles(t, []string{"compose.yaml"}, extra...)
}

// loadFiles is loadProject of files, each over the ones before it, as
// `docker compose -f a -f b` loads them.
func loadFiles(t *testing.T, files []string, extra ...string) *types.Project {
	t.Helper()
	env := slices.Clone(extra)
	for _, v := range secretVars {
		env = append(env, v+"="+secretOf(v))
	}
	project, err := loadFilesEnv(files, env)
	require.NoError(t, err)
	return project
}

// loadProjectEnv loads compose.yaml with env alone.
func loadProjectEnv(env []string) (*types.Project, error) {
	return loadFilesEnv([]string{"compose.yaml"}, env)
}

// loadFilesEnv loads files with env alone.
func loadFilesEnv(files, env []string) (*types.Project, error) {
	opts, err := cli.NewProjectOptions(files,
		cli.WithWorkingDirectory("."), cli.WithName("weft"), cli.WithEnv(env))
	if err != nil {
		return nil, err
	}
	return opts.LoadProject(context.Background())
}

// secretsDir is where a service finds its folder of the volume secrets.
const secretsDir = "/run/weft-secrets"

// Only the one-shot service secrets mounts the whole volume secrets, and
// writes to it; every other service mounts its own folder (a subpath,
// read-only), so that none reads another's secrets: the engine's task key
// is the engine's alone (a worker with it could sign its own forgeries),
// and no secret's value reaches a service but secrets in its environment.
func TestEachServiceMountsItsOwnSecrets(t *testing.T) {
	t.Parallel()
	p := loadProject(t)
	for name, svc := range p.Services {
		var mounts []types.ServiceVolumeConfig
		for _, v := range svc.Volumes {
			if v.Source == "secrets" {
				mounts = append(mounts, v)
			}
		}
		if name == "secrets" {
			require.Len(t, mounts, 1)
			require.Equal(t, secretsDir, mounts[0].Target)
			require.False(t, mounts[0].ReadOnly, "it writes them")
			require.True(t, mounts[0].Volume == nil || mounts[0].Volume.Subpath == "", "the whole volume")
			for _, v := range secretVars {
				require.Equal(t, secretOf(v), env(svc, v), "%s: .env's value is written on first start", v)
			}
			continue
		}
		require.Len(t, mounts, 1, "%s mounts its folder of secrets", name)
		require.Equal(t, secretsDir, mounts[0].Target, name)
		require.True(t, mounts[0].ReadOnly, name)
		require.NotNil(t, mounts[0].Volume, name)
		require.Equal(t, name, mounts[0].Volume.Subpath, "%s mounts its own folder only", name)
		for k, v := range svc.Environment {
			require.NotContains(t, secretVars, k, "%s: secrets come from files", name)
			for _, secret := range secretVars {
				if v != nil {
					require.NotContains(t, *v, secretOf(secret), "%s: %s", name, k)
				}
			}
		}
		if name != "engine" {
			require.NotContains(t, svc.Environment, "WEFT_TASK_KEY_FILE", name)
		}
	}
	require.Equal(t, secretsDir+"/task-key", env(service(t, p, "engine"), "WEFT_TASK_KEY_FILE"))
	require.Equal(t, secretsDir+"/postgres-password", env(service(t, p, "postgres"), "POSTGRES_PASSWORD_FILE"))
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	svc, err := p.GetService(name)
	require.NoError(t, err, "service %s", name)
	return svc
}

func env(svc types.ServiceConfig, key string) string {
	if v := svc.Environment[key]; v != nil {
		return *v
	}
	return ""
}

func TestComposeTopology(t *testing.T) {
	t.Parallel()
	p := loadProject(t)
	var names []string
	for name := range p.Services {
		names = append(names, name)
	}
	require.ElementsMatch(t, []string{"secrets", "postgres", "nats", "migrate", "maintain", "relay", "engine", "gateway", "projector", "worker"}, names)

	secrets := service(t, p, "secrets")
	require.Equal(t, types.ShellCommand{"secrets", "init", "--dir", secretsDir, "--owner", "65532:65532"}, secrets.Command,
		"the files belong to the image's user, nonroot")
	require.Equal(t, "weft:local", secrets.Image)
	require.Equal(t, types.PullPolicyBuild, secrets.PullPolicy)
	require.Equal(t, "0:0", secrets.User, "root, to give the files to nonroot")
	require.Equal(t, []string{"ALL"}, secrets.CapDrop)
	require.Equal(t, []string{"CHOWN"}, secrets.CapAdd, "chown and nothing else")
	require.True(t, secrets.ReadOnly)
	require.Equal(t, "no", secrets.Restart, "a one-shot")
	for _, name := range []string{"postgres", "nats"} {
		svc := service(t, p, name)
		require.Equal(t, types.ServiceConditionCompletedSuccessfully, svc.DependsOn["secrets"].Condition, name)
		require.Equal(t, types.ShellCommand{"/usr/local/bin/weft-entrypoint.sh"}, svc.Entrypoint, "%s reads its secrets' files", name)
	}

	for _, name := range []string{"postgres", "nats"} {
		svc := service(t, p, name)
		require.NotNil(t, svc.HealthCheck, "%s needs a healthcheck", name)
		require.NotEmpty(t, svc.HealthCheck.Test, "%s healthcheck test", name)
	}

	migrate := service(t, p, "migrate")
	require.Equal(t, types.ShellCommand{"migrate"}, migrate.Command)
	require.NotNil(t, migrate.Build, "migrate builds the weft image")
	require.Equal(t, "Dockerfile", migrate.Build.Dockerfile)
	require.Equal(t, "weft:local", migrate.Image)
	require.Equal(t, types.PullPolicyBuild, migrate.PullPolicy, "built here, never pulled: `docker compose pull` skips it")
	require.Equal(t, types.ServiceConditionHealthy, migrate.DependsOn["postgres"].Condition)
	require.Equal(t, types.ServiceConditionHealthy, migrate.DependsOn["nats"].Condition, "migrate creates the streams")
	require.Equal(t, "no", migrate.Restart, "a one-shot")
	require.Equal(t, "/etc/weft/grants.sql", env(migrate, "WEFT_GRANTS_FILE"), "the grants the Dockerfile bakes in")
	require.NotEmpty(t, env(migrate, "WEFT_NATS_URL"))

	for name := range weftServices {
		svc := service(t, p, name)
		require.Equal(t, migrate.Image, svc.Image, "%s: one image for every weft service", name)
		require.Nil(t, svc.Build, "%s: only migrate builds", name)
		require.Equal(t, types.PullPolicyBuild, svc.PullPolicy, "%s: built here, never pulled", name)
		require.Equal(t, types.ShellCommand{name}, svc.Command)
		require.Equal(t, types.ServiceConditionCompletedSuccessfully, svc.DependsOn["migrate"].Condition, name)
		require.Equal(t, types.ServiceConditionHealthy, svc.DependsOn["nats"].Condition, name)
		require.Equal(t, "unless-stopped", svc.Restart, name)
		require.True(t, svc.ReadOnly, "%s: read-only root file system", name)
		require.Equal(t, []string{"ALL"}, svc.CapDrop, name)
		if name != "gateway" { // it uses no stream
			require.Equal(t, "false", env(svc, "WEFT_ENSURE_STREAMS"), "%s: streams are migrate's", name)
		}
		if name == "worker" {
			require.Empty(t, env(svc, "WEFT_DATABASE_URL"), "workers never touch Postgres")
			require.NotContains(t, svc.DependsOn, "postgres")
		} else {
			require.Equal(t, types.ServiceConditionHealthy, svc.DependsOn["postgres"].Condition, name)
		}
	}

	gw := service(t, p, "gateway")
	require.Len(t, gw.Ports, 1)
	require.EqualValues(t, 8080, gw.Ports[0].Target)
	require.Equal(t, "8080", gw.Ports[0].Published)

	proj := service(t, p, "projector")
	require.Equal(t, "http://gateway:8080", env(proj, "WEFT_GATEWAY_URL"), "the UI's signals reach the gateway by its service name")
	require.Len(t, proj.Ports, 1)
	require.EqualValues(t, 8081, proj.Ports[0].Target)

	nats := service(t, p, "nats")
	require.Len(t, nats.Ports, 1)
	require.Equal(t, "4222", nats.Ports[0].Published)
	for _, name := range []string{"relay", "engine", "worker", "migrate", "maintain"} {
		require.Empty(t, service(t, p, name).Ports, "%s: only the gateway, the projector and NATS are published", name)
	}

	maintain := service(t, p, "maintain")
	require.Equal(t, types.ShellCommand{"maintain"}, maintain.Command)
	require.Equal(t, migrate.Image, maintain.Image)
	require.Equal(t, types.PullPolicyBuild, maintain.PullPolicy)
	require.Equal(t, types.ServiceConditionCompletedSuccessfully, maintain.DependsOn["migrate"].Condition)
	require.Equal(t, "unless-stopped", maintain.Restart, "it repeats its pass (WEFT_MAINTAIN_EVERY)")
	require.NotEmpty(t, env(maintain, "WEFT_MAINTAIN_EVERY"))
}

// Every weft service, maintain included, is health-checked with `weft
// health` on the /readyz of its own ops listener: the image has no shell,
// curl or wget.
func TestEveryWeftServiceHasAHealthcheckOnItsOpsPort(t *testing.T) {
	t.Parallel()
	p := loadProject(t)
	for name, defaultPort := range opsPorts() {
		svc := service(t, p, name)
		require.NotNil(t, svc.HealthCheck, "%s needs a healthcheck", name)
		opsAddr := env(svc, "WEFT_"+strings.ToUpper(name)+"_OPS_ADDR")
		_, port, err := net.SplitHostPort(opsAddr)
		require.NoError(t, err, "%s: WEFT_%s_OPS_ADDR", name, strings.ToUpper(name))
		require.Equal(t, defaultPort, port, "%s: the command's default ops port", name)
		require.Equal(t, types.HealthCheckTest{"CMD", "/usr/local/bin/weft", "health", "--url", "http://127.0.0.1:" + port + "/readyz"},
			svc.HealthCheck.Test, name)
		require.NotNil(t, svc.HealthCheck.Interval, name)
		require.NotNil(t, svc.HealthCheck.StartPeriod, name)
	}
	// The Postgres healthcheck goes over TCP, which the first start's init
	// scripts do not open.
	require.Contains(t, strings.Join(service(t, p, "postgres").HealthCheck.Test, " "), "-h 127.0.0.1")
}

// Each service connects to Postgres as its own role and to NATS as its own
// user; the URLs hold no password: each is in a file of the service's
// folder (PGPASSFILE, WEFT_NATS_PASSWORD_FILE), which `weft secrets init`
// writes for that role and that user (cmd/weft/secrets.go; the topology
// test runs it).
func TestEveryServiceHasItsOwnCredentials(t *testing.T) {
	t.Parallel()
	p := loadProject(t)
	for name, role := range map[string]string{
		"migrate": "weft_migrator", "maintain": "weft_migrator", "relay": "weft_relay", "engine": "weft_engine", "gateway": "weft_gateway", "projector": "weft_projector",
	} {
		svc := service(t, p, name)
		u, err := url.Parse(env(svc, "WEFT_DATABASE_URL"))
		require.NoError(t, err, name)
		require.Equal(t, role, u.User.Username(), name)
		_, hasPassword := u.User.Password()
		require.False(t, hasPassword, name)
		require.Equal(t, secretsDir+"/pgpass", env(svc, "PGPASSFILE"), name)
		require.Equal(t, "postgres:5432", u.Host, name)
		require.Equal(t, "/weft", u.Path, name)
	}
	for _, name := range []string{"migrate", "relay", "engine", "gateway", "projector", "worker"} {
		svc := service(t, p, name)
		u, err := url.Parse(env(svc, "WEFT_NATS_URL"))
		require.NoError(t, err, name)
		require.Equal(t, name, u.User.Username(), name)
		_, hasPassword := u.User.Password()
		require.False(t, hasPassword, name)
		require.Equal(t, secretsDir+"/nats-password", env(svc, "WEFT_NATS_PASSWORD_FILE"), name)
		require.Equal(t, "nats:4222", u.Host, name)
	}
	for _, name := range []string{"gateway", "projector"} {
		require.Equal(t, secretsDir+"/api-keys", env(service(t, p, name), "WEFT_API_KEYS_FILE"), name)
	}
}

// The roles script runs when the Postgres volume is created, before the
// script that sets the roles' passwords, which the entrypoint wrapper
// reads from the secrets volume; nats' wrapper does the same for its users.
func TestPostgresInitScripts(t *testing.T) {
	t.Parallel()
	pg := service(t, loadProject(t), "postgres")
	targets := map[string]string{}
	for _, v := range pg.Volumes {
		targets[v.Target] = v.Source
	}
	require.True(t, strings.HasSuffix(targets["/docker-entrypoint-initdb.d/10-weft-roles.sql"], "deploy/postgres/roles.sql"))
	require.True(t, strings.HasSuffix(targets["/docker-entrypoint-initdb.d/20-weft-passwords.sh"], "deploy/postgres/passwords.sh"))
	require.True(t, strings.HasSuffix(targets["/usr/local/bin/weft-entrypoint.sh"], "deploy/postgres/entrypoint.sh"),
		"it exports the roles' passwords from the secrets volume for passwords.sh")
	require.True(t, strings.HasSuffix(service(t, loadProject(t), "nats").Volumes[1].Source, "deploy/nats-entrypoint.sh"))
	require.Equal(t, "weft", env(pg, "POSTGRES_DB"))
}

// Every published port of every service listens on the host's loopback
// unless WEFT_PUBLISH_ADDR says otherwise, on the host port its variable
// names (the container port stays); the nats monitoring port is not
// published (nats.conf binds it to the container's loopback).
func TestPublishedPortsAreLoopbackByDefault(t *testing.T) {
	t.Parallel()
	moved := []string{"WEFT_GATEWAY_PORT=18080", "WEFT_PROJECTOR_PORT=18081", "WEFT_NATS_PORT=14222"}
	for _, c := range []struct {
		env  []string
		host string
		want []string // service:published:target
	}{
		{nil, "127.0.0.1", []string{"gateway:8080:8080", "projector:8081:8081", "nats:4222:4222"}},
		{[]string{"WEFT_PUBLISH_ADDR=0.0.0.0"}, "0.0.0.0", []string{"gateway:8080:8080", "projector:8081:8081", "nats:4222:4222"}},
		{[]string{"WEFT_PUBLISH_ADDR=10.1.2.3"}, "10.1.2.3", []string{"gateway:8080:8080", "projector:8081:8081", "nats:4222:4222"}},
		{moved, "127.0.0.1", []string{"gateway:18080:8080", "projector:18081:8081", "nats:14222:4222"}},
	} {
		p := loadProject(t, c.env...)
		var published []string
		for name, svc := range p.Services {
			for _, port := range svc.Ports {
				require.Equal(t, c.host, port.HostIP, "%s publishes %d on %q (%v)", name, port.Target, port.HostIP, c.env)
				published = append(published, fmt.Sprintf("%s:%s:%d", name, port.Published, port.Target))
			}
		}
		require.ElementsMatch(t, c.want, published, "only the gateway, the projector and NATS are published (%v)", c.env)
	}
	// The gateway's address inside the network does not move with its host
	// port.
	require.Equal(t, "http://gateway:8080", env(service(t, loadProject(t, moved...), "projector"), "WEFT_GATEWAY_URL"))
}
