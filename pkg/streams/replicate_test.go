package streams_test

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestIsWeftStream(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"WEFT_EVENTS", "WEFT_TASKS", "WEFT_RESULTS", "WEFT_CANCELS", "KV_WEFT_HEARTBEATS",
		streams.TaskLanesStream("default"), streams.TaskLanesStream("a.b")} {
		require.True(t, streams.IsWeftStream(name), name)
	}
	for _, sc := range streams.All(streams.Config{}) {
		require.True(t, streams.IsWeftStream(sc.Name), sc.Name)
	}
	for _, name := range []string{"WEFT_TASKS_", "WEFT_TASKS_a~b", "WEFT_OTHER", "KV_OTHER", "ORDERS", "weft_events"} {
		require.False(t, streams.IsWeftStream(name), name)
	}
	require.True(t, streams.IsTaskLanesStream("WEFT_TASKS_default"))
	require.False(t, streams.IsTaskLanesStream("WEFT_TASKS"))
}

// Streams made at one replica on a 3-node cluster, as a single server's
// migrate and engine made them (the five of Ensure and the heartbeat
// bucket's, two queues' lanes streams), are all given three by Replicate,
// their messages kept; a stream not Weft's keeps its one; a second run
// changes nothing; and a run with one replica brings them back down.
func TestReplicateGivesEveryWeftStreamItsReplicas(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cluster := weftest.NewNATSCluster(t, 3)
	js := cluster.JetStream(t)
	require.NoError(t, streams.Ensure(ctx, js, streams.Config{}))
	for _, queue := range []string{"default", "batch"} {
		require.NoError(t, streams.EnsureTaskLanes(ctx, js, streams.Config{}, queue))
	}
	_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "WEFT_HEARTBEATS"})
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.*"}})
	require.NoError(t, err)
	_, err = js.Publish(ctx, "weft.tasks.default.acme", []byte("task"))
	require.NoError(t, err)

	weft := []string{"KV_WEFT_HEARTBEATS", "WEFT_CANCELS", "WEFT_EVENTS", "WEFT_RESULTS", "WEFT_TASKS", "WEFT_TASKS_batch", "WEFT_TASKS_default"}
	changes, err := streams.Replicate(ctx, js, 3)
	require.NoError(t, err)
	want := make([]streams.ReplicaChange, len(weft))
	for i, name := range weft {
		want[i] = streams.ReplicaChange{Stream: name, From: 1, To: 3}
	}
	require.Equal(t, want, changes)
	require.Equal(t, "stream WEFT_TASKS_default: replicas 1 -> 3", changes[6].String())
	for _, name := range weft {
		require.Equal(t, 3, replicasOf(t, js, name), name)
	}
	require.Equal(t, 1, replicasOf(t, js, "ORDERS"), "not Weft's")
	s, err := js.Stream(ctx, "WEFT_TASKS_default")
	require.NoError(t, err)
	require.Equal(t, uint64(1), s.CachedInfo().State.Msgs, "the lane's task is kept")
	lanes, err := streams.TaskLanes(streams.Config{}, "default")
	require.NoError(t, err)
	lanes.Replicas = 3
	got := s.CachedInfo().Config
	require.Equal(t, lanes.Subjects, got.Subjects, "only the replicas change")
	require.Equal(t, lanes.MaxBytes, got.MaxBytes)
	require.Equal(t, lanes.Retention, got.Retention)

	changes, err = streams.Replicate(ctx, js, 3)
	require.NoError(t, err)
	require.Empty(t, changes, "a second run changes nothing")

	changes, err = streams.Replicate(ctx, js, 1)
	require.NoError(t, err)
	require.Len(t, changes, len(weft))
	require.Equal(t, streams.ReplicaChange{Stream: "WEFT_EVENTS", From: 3, To: 1}, changes[2])
	require.Equal(t, 1, replicasOf(t, js, "WEFT_TASKS_default"))
}

// A single server holds one copy of a stream: asked for three, Replicate
// fails, naming each stream and the replicas asked, and changes nothing.
func TestReplicateOnOneServerFails(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	js := weftest.NewNATS(t).JetStream(t)
	require.NoError(t, streams.EnsureTaskLanes(ctx, js, streams.Config{}, "default"))
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.*"}})
	require.NoError(t, err)

	changes, err := streams.Replicate(ctx, js, 3)
	require.Empty(t, changes)
	var re *streams.ReplicasError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "WEFT_TASKS_default", re.Stream)
	require.Equal(t, 3, re.Replicas)
	require.Equal(t, 1, re.Have)
	require.ErrorContains(t, err, "stream WEFT_TASKS_default has 1 replicas and cannot have 3")
	require.NotContains(t, err.Error(), "ORDERS")
	require.Equal(t, 1, replicasOf(t, js, "WEFT_TASKS_default"))

	_, err = streams.Replicate(ctx, js, 6)
	require.ErrorIs(t, err, streams.ErrInvalidConfig)
}

func replicasOf(t *testing.T, js jetstream.JetStream, stream string) int {
	t.Helper()
	s, err := js.Stream(t.Context(), stream)
	require.NoError(t, err)
	return s.CachedInfo().Config.Replicas
}
