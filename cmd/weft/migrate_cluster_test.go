package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// `weft migrate --stream-replicas 3`, given every node of a 3-node
// cluster, makes each of Weft's streams with three replicas, and a
// second run with the same flags changes nothing.
func TestMigrateMakesStreamsOfTheReplicasAsked(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	cluster := weftest.NewNATSCluster(t, 3)
	env := envOf(map[string]string{"WEFT_DATABASE_URL": db.URL, "WEFT_NATS_URL": cluster.URLs()})
	for range 2 {
		var out, errOut weftest.Buffer
		require.NoError(t, run(t.Context(), []string{"migrate", "--stream-replicas", "3"}, &out, &errOut, env))
		require.Contains(t, out.String(), "streams are up to date")
	}
	js := cluster.JetStream(t)
	for _, sc := range streams.All(streams.Config{}) {
		s, err := js.Stream(t.Context(), sc.Name)
		require.NoError(t, err)
		info := s.CachedInfo()
		require.Equal(t, 3, info.Config.Replicas, sc.Name)
		require.NotNil(t, info.Cluster, sc.Name)
		require.Len(t, info.Cluster.Replicas, 2, "%s: a leader and two followers", sc.Name)
	}
}

// While a cluster forms, before its meta leader has heard from every
// node, it cannot place a stream of three replicas: `weft migrate
// --placement-wait 0` fails at once with what to do, and with a wait it
// goes on trying, says so, and makes the streams once the last node is in.
func TestMigrateWaitsForTheClusterToPlaceTheStreams(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	cluster := weftest.NewNATSClusterStarting(t, 3, 2)
	env := envOf(map[string]string{"WEFT_DATABASE_URL": db.URL, "WEFT_NATS_URL": cluster.URLs()})

	var out, errOut weftest.Buffer
	err := run(t.Context(), []string{"migrate", "--stream-replicas", "3", "--placement-wait", "0"}, &out, &errOut, env)
	require.ErrorContains(t, err, "err_code=10005")
	require.ErrorContains(t, err, "needs a JetStream cluster of at least 3 servers, all of them running")
	require.NotContains(t, errOut.String(), "waiting for the JetStream cluster")

	var waiting weftest.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(t.Context(), []string{"migrate", "--stream-replicas", "3", "--placement-wait", "10m"}, &out, &waiting, env)
	}()
	require.Eventually(t, func() bool { return strings.Contains(waiting.String(), "waiting for the JetStream cluster") },
		time.Minute, 20*time.Millisecond)
	cluster.Start(2)
	require.NoError(t, <-done)
	require.Contains(t, out.String(), "streams are up to date")
	js := cluster.JetStream(t)
	for _, sc := range streams.All(streams.Config{}) {
		s, err := js.Stream(t.Context(), sc.Name)
		require.NoError(t, err)
		require.Equal(t, 3, s.CachedInfo().Config.Replicas, sc.Name)
	}
}
