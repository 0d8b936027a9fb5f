// Package deploy holds the compose topology. There is no Docker engine in CI,
// so this test loads deploy/compose.yaml with compose-go, the library Docker
// Compose itself uses, and checks its shape.
package deploy

import (
	"context"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/require"
)

func loadProject(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"compose.yaml"},
		cli.WithWorkingDirectory("."), cli.WithName("weft"))
	require.NoError(t, err)
	project, err := opts.LoadProject(context.Background())
	require.NoError(t, err)
	return project
}

func TestComposeTopology(t *testing.T) {
	t.Parallel()
	p := loadProject(t)

	for _, name := range []string{"postgres", "nats", "migrate", "relay", "engine", "gateway", "projector", "worker"} {
		_, err := p.GetService(name)
		require.NoError(t, err, "service %s", name)
	}
	for _, name := range []string{"postgres", "nats"} {
		svc, _ := p.GetService(name)
		require.NotNil(t, svc.HealthCheck, "%s needs a healthcheck", name)
		require.NotEmpty(t, svc.HealthCheck.Test, "%s healthcheck test", name)
	}

	migrate, _ := p.GetService("migrate")
	require.Equal(t, types.ShellCommand{"migrate"}, migrate.Command)
	require.NotNil(t, migrate.Build, "migrate builds the weft image")
	require.Equal(t, "Dockerfile", migrate.Build.Dockerfile)
	require.Equal(t, types.ServiceConditionHealthy, migrate.DependsOn["postgres"].Condition)

	gw, _ := p.GetService("gateway")
	require.Equal(t, types.ShellCommand{"gateway"}, gw.Command)
	require.Equal(t, migrate.Image, gw.Image)
	require.Equal(t, types.ServiceConditionCompletedSuccessfully, gw.DependsOn["migrate"].Condition)
	require.Contains(t, gw.Environment, "WEFT_API_KEYS")
	require.EqualValues(t, 8080, gw.Ports[0].Target)

	proj, _ := p.GetService("projector")
	require.Equal(t, types.ShellCommand{"projector"}, proj.Command)
	require.Equal(t, migrate.Image, proj.Image)
	require.Equal(t, types.ServiceConditionCompletedSuccessfully, proj.DependsOn["migrate"].Condition)
	require.Contains(t, proj.Environment, "WEFT_API_KEYS")
	require.Equal(t, "http://gateway:8080", *proj.Environment["WEFT_GATEWAY_URL"], "the UI's signals reach the gateway by its service name")
	require.EqualValues(t, 8081, proj.Ports[0].Target)

	relay, _ := p.GetService("relay")
	require.Equal(t, migrate.Image, relay.Image, "one image for every weft service")
	require.Equal(t, types.ServiceConditionCompletedSuccessfully, relay.DependsOn["migrate"].Condition)
	require.Equal(t, types.ServiceConditionHealthy, relay.DependsOn["nats"].Condition)
	require.NotEmpty(t, relay.Environment["WEFT_DATABASE_URL"])
	require.NotEmpty(t, relay.Environment["WEFT_NATS_URL"])

	engine, _ := p.GetService("engine")
	require.Equal(t, types.ShellCommand{"engine"}, engine.Command)
	require.Equal(t, migrate.Image, engine.Image)
	require.Equal(t, types.ServiceConditionCompletedSuccessfully, engine.DependsOn["migrate"].Condition)
	require.NotEmpty(t, engine.Environment["WEFT_DATABASE_URL"])

	worker, _ := p.GetService("worker")
	require.Equal(t, types.ShellCommand{"worker"}, worker.Command)
	require.Empty(t, worker.Environment["WEFT_DATABASE_URL"], "workers never touch Postgres")
	require.NotEmpty(t, worker.Environment["WEFT_NATS_URL"])

	nats, _ := p.GetService("nats")
	require.Len(t, nats.Ports, 1)
	require.Equal(t, "4222", nats.Ports[0].Published)
}
