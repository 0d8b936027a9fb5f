package deploy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// clusterStores are the /data volumes of the overlay's three nodes; the
// first is the single server's (compose.yaml's nats service).
type clusterStores [3]string

// startConfNode starts a server from conf (nats.conf or
// nats-cluster.conf, with loadNATSConf's passwords set) named name, on
// the store dir, as a node of the cluster whose route ports are routes
// (none: a single server). Its ports are moved to loopback; it is shut
// down when the test ends, or by the caller.
func startConfNode(t *testing.T, conf, name, store string, i int, routes []int) *server.Server {
	t.Helper()
	opts, err := server.ProcessConfigFile(conf)
	require.NoError(t, err)
	opts.ServerName = name
	opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", -1, 0
	opts.StoreDir = store
	opts.NoSigs, opts.NoLog = true, true
	if len(routes) > 0 {
		urls := make([]string, len(routes))
		for j, p := range routes {
			urls[j] = fmt.Sprintf("nats-route://127.0.0.1:%d", p)
		}
		opts.Cluster.Host, opts.Cluster.Port = "127.0.0.1", routes[i]
		opts.Routes = server.RoutesFromStr(strings.Join(urls, ","))
	}
	srv, err := server.NewServer(opts)
	require.NoError(t, err)
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	require.True(t, srv.ReadyForConnections(30*time.Second), name)
	return srv
}

// startOverlay starts the overlay's three nodes from nats-cluster.conf
// on stores and waits for them to be healthy; it returns the client URLs of
// all three, as the services are given them.
func startOverlay(t *testing.T, stores clusterStores) string {
	t.Helper()
	routes := []int{weftest.FreePort(t), weftest.FreePort(t), weftest.FreePort(t)}
	var nodes []*server.Server
	var urls []string
	for i, store := range stores {
		srv := startConfNode(t, "nats-cluster.conf", fmt.Sprintf("weft-nats-%d", i+1), store, i, routes)
		nodes = append(nodes, srv)
		urls = append(urls, srv.ClientURL())
	}
	// As compose.cluster.yaml's migrate waits for every node's healthcheck
	// (/healthz), and for a meta leader that knows all three peers.
	require.Eventually(t, func() bool {
		leader := false
		for _, n := range nodes {
			if n.Healthz(nil).Status != "ok" {
				return false
			}
			leader = leader || n.JetStreamIsLeader() && len(n.JetStreamClusterPeers()) == len(nodes)
		}
		return leader
	}, 30*time.Second, 20*time.Millisecond, "the three nodes are healthy with a meta leader")
	return strings.Join(urls, ",")
}

// connectURLs connects to urls as user, as connectAs does.
func connectURLs(t *testing.T, urls, user string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(urls, nats.UserInfo(user, "pw-"+user), nats.CustomInboxPrefix("_INBOX_"+user))
	require.NoError(t, err, user)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}

// migrateAs does what `weft migrate --stream-replicas n` does with
// Weft's streams (cmd/weft ensureStreams), as the user migrate.
func migrateAs(t *testing.T, js jetstream.JetStream, n int) []streams.ReplicaChange {
	t.Helper()
	changes, err := streams.Replicate(t.Context(), js, n)
	require.NoError(t, err)
	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{Replicas: n}))
	return changes
}

// weftStreamNames are the streams a deployment with the queue "default"
// has once its engine has started and dispatched a tenant's task.
var weftStreamNames = []string{"KV_WEFT_HEARTBEATS", "WEFT_CANCELS", "WEFT_EVENTS", "WEFT_RESULTS", "WEFT_TASKS", "WEFT_TASKS_default"}

// requireReplicas checks every one of weftStreamNames has n replicas, as
// the user of js reads their infos, and returns them by name.
func requireReplicas(t *testing.T, js jetstream.JetStream, n int) map[string]*jetstream.StreamInfo {
	t.Helper()
	infos := map[string]*jetstream.StreamInfo{}
	for _, name := range weftStreamNames {
		s, err := js.Stream(t.Context(), name)
		require.NoError(t, err, name)
		require.Equal(t, n, s.CachedInfo().Config.Replicas, name)
		infos[name] = s.CachedInfo()
	}
	return infos
}

// engineStart does what the engine does at start with --stream-replicas
// n, as the user engine: its heartbeat bucket and the queue default's
// lanes stream, as before its first task of a tenant.
func engineStart(t *testing.T, js jetstream.JetStream, n int) {
	t.Helper()
	bucket := heartbeatBucket()
	bucket.Replicas = n
	_, err := js.CreateOrUpdateKeyValue(t.Context(), bucket)
	require.NoError(t, err)
	require.NoError(t, streams.EnsureTaskLanes(t.Context(), js, streams.Config{Replicas: n}, "default"))
}

// Moving a single server's volume into the overlay (docs/deploy.md,
// "Moving to the cluster"): a server from nats.conf whose streams
// migrate and the engine made at one replica, a task waiting on a lane,
// is stopped and its store becomes the first node of the cluster from
// nats-cluster.conf. nats-server does not carry a standalone server's
// streams into its cluster (the doc says what that costs); whatever it
// does with them, migrate with three replicas and the engine's start
// leave every Weft stream the cluster has at three, the relay's
// publishes through each node land in the replicated lanes stream (no
// copy of one replica on the old node takes them), and a second
// migrate changes nothing. Not parallel: loadNATSConf uses t.Setenv.
func TestMovingToTheClusterReplicatesEveryStream(t *testing.T) {
	loadNATSConf(t)
	ctx := t.Context()
	stores := clusterStores{t.TempDir(), t.TempDir(), t.TempDir()}
	single := startConfNode(t, "nats.conf", "weft-nats", stores[0], 0, nil)
	require.Empty(t, migrateAs(t, connectURLs(t, single.ClientURL(), "migrate"), 1))
	engineStart(t, connectURLs(t, single.ClientURL(), "engine"), 1)
	_, err := connectURLs(t, single.ClientURL(), "relay").Publish(ctx, "weft.tasks.default.acme", []byte("task"))
	require.NoError(t, err)
	single.Shutdown()
	single.WaitForShutdown()

	urls := startOverlay(t, stores)
	migrate := connectURLs(t, urls, "migrate")
	for _, c := range migrateAs(t, migrate, 3) {
		require.Equal(t, streams.ReplicaChange{Stream: c.Stream, From: 1, To: 3}, c)
	}
	engineStart(t, connectURLs(t, urls, "engine"), 3)
	before := requireReplicas(t, migrate, 3)["WEFT_TASKS_default"].State.LastSeq
	for _, u := range strings.Split(urls, ",") {
		ack, err := connectURLs(t, u, "relay").Publish(ctx, "weft.tasks.default.acme", []byte("task"))
		require.NoError(t, err, u)
		require.Equal(t, "WEFT_TASKS_default", ack.Stream, u)
	}
	after := requireReplicas(t, migrate, 3)["WEFT_TASKS_default"].State.LastSeq
	require.Equal(t, before+3, after, "every node's publish is in the replicated stream")
	require.Empty(t, migrateAs(t, migrate, 3), "a second migrate changes nothing")
}

// A cluster from empty volumes: migrate with three replicas makes Weft's
// streams with three. An engine started without --stream-replicas makes
// its heartbeat bucket and lanes stream with one; migrate, as the user
// migrate, gives them three, saying so; the engine with three, as
// compose.cluster.yaml runs it, keeps them; and a later migrate finds
// nothing to change. Not parallel: loadNATSConf uses t.Setenv.
func TestFreshClusterMakesEveryStreamWithItsReplicas(t *testing.T) {
	loadNATSConf(t)
	urls := startOverlay(t, clusterStores{t.TempDir(), t.TempDir(), t.TempDir()})
	migrate := connectURLs(t, urls, "migrate")
	require.Empty(t, migrateAs(t, migrate, 3), "nothing to replicate before the streams exist")
	engine := connectURLs(t, urls, "engine")
	engineStart(t, engine, 1)
	require.Equal(t, []streams.ReplicaChange{
		{Stream: "KV_WEFT_HEARTBEATS", From: 1, To: 3},
		{Stream: "WEFT_TASKS_default", From: 1, To: 3},
	}, migrateAs(t, migrate, 3))
	requireReplicas(t, migrate, 3)
	engineStart(t, engine, 3)
	requireReplicas(t, migrate, 3)
	require.Empty(t, migrateAs(t, migrate, 3), "a second migrate changes nothing")
}
