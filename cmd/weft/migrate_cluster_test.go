package main

import (
	"testing"

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
