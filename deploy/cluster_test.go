package deploy

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
)

// natsNodes are the cluster's nodes in compose.cluster.yaml.
var natsNodes = []string{"nats", "nats-2", "nats-3"}

// The cluster overlay runs three NATS nodes from nats-cluster.conf, each
// with its own name and store, healthy only once it follows a meta
// leader; only the first publishes a port. Every service that uses NATS
// is given all three nodes as its own user, the streams are made with
// three replicas, and migrate waits for every node.
func TestComposeClusterOverlay(t *testing.T) {
	t.Parallel()
	p := loadFiles(t, []string{"compose.yaml", "compose.cluster.yaml"})
	stores := map[string]bool{}
	for i, name := range natsNodes {
		n := service(t, p, name)
		require.Equal(t, types.ShellCommand{"-c", "/etc/nats/nats-cluster.conf", "--name", fmt.Sprintf("weft-nats-%d", i+1)}, n.Command, name)
		require.Equal(t, types.ShellCommand{"/usr/local/bin/weft-entrypoint.sh"}, n.Entrypoint, "%s reads its secrets' files", name)
		require.Equal(t, []string{"CMD-SHELL", "wget -qO- http://127.0.0.1:8222/healthz"}, []string(n.HealthCheck.Test), name)
		for _, v := range n.Volumes {
			if v.Target == "/data" {
				require.False(t, stores[v.Source], "%s shares the store %s", name, v.Source)
				stores[v.Source] = true
			}
		}
		if i > 0 {
			require.Empty(t, n.Ports, "%s publishes no port", name)
		}
	}
	require.Len(t, stores, 3)
	require.NotEmpty(t, service(t, p, "nats").Ports)

	for name := range weftServices {
		svc := service(t, p, name)
		urls := strings.Split(*svc.Environment["WEFT_NATS_URL"], ",")
		require.Len(t, urls, 3, name)
		for i, raw := range urls {
			u, err := url.Parse(raw)
			require.NoError(t, err)
			require.Equal(t, natsNodes[i]+":4222", u.Host, name)
			require.Equal(t, name, u.User.Username(), "%s connects as its own user (deploy/nats.conf)", name)
		}
	}
	for _, name := range []string{"migrate", "relay", "engine", "projector", "worker"} {
		require.Equal(t, "3", *service(t, p, name).Environment["WEFT_STREAM_REPLICAS"], name)
	}
	migrate := service(t, p, "migrate")
	for _, name := range natsNodes {
		require.Equal(t, types.ServiceConditionHealthy, migrate.DependsOn[name].Condition, "migrate waits for %s", name)
	}
}

// nats-cluster.conf, as nats-server reads it (nats.conf included, the
// cluster block after it), makes three nodes that form a JetStream
// cluster with nats.conf's accounts and users. The routes and ports are
// moved to loopback; the rest is the file's.
func TestNATSClusterConfFormsACluster(t *testing.T) { // not parallel: t.Setenv
	for _, u := range natsUsers {
		t.Setenv("WEFT_NATS_"+strings.ToUpper(u)+"_PASSWORD", "pw-"+u)
	}
	routePorts := []int{weftest.FreePort(t), weftest.FreePort(t), weftest.FreePort(t)}
	var nodes []*server.Server
	for i := range natsNodes {
		opts, err := server.ProcessConfigFile("nats-cluster.conf")
		require.NoError(t, err)
		require.Equal(t, "weft", opts.Cluster.Name)
		require.Len(t, opts.Routes, 3, "every node routes to all three")
		require.True(t, opts.JetStream)
		opts.ServerName = fmt.Sprintf("weft-nats-%d", i+1) // --name
		opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", -1, 0
		opts.StoreDir = t.TempDir()
		opts.NoSigs, opts.NoLog = true, true
		opts.Cluster.Host, opts.Cluster.Port = "127.0.0.1", routePorts[i]
		opts.Routes = server.RoutesFromStr(fmt.Sprintf("nats-route://127.0.0.1:%d,nats-route://127.0.0.1:%d,nats-route://127.0.0.1:%d",
			routePorts[0], routePorts[1], routePorts[2]))
		srv, err := server.NewServer(opts)
		require.NoError(t, err)
		srv.Start()
		t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
		require.True(t, srv.ReadyForConnections(30*time.Second))
		nodes = append(nodes, srv)
	}
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			if n.JetStreamIsLeader() {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the three nodes elect a meta leader")
	for _, n := range nodes {
		require.True(t, n.JetStreamIsClustered())
	}
}
