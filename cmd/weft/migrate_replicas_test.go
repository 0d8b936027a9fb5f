package main

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// Moving onto a cluster: streams of one replica, as a single server's
// migrate and engine left them (a task queue's lanes stream and the
// heartbeat bucket among them, a task waiting on a lane), are given three
// by `weft migrate --stream-replicas 3`, one line for each, the task
// kept; a second run changes nothing and prints no stream line.
func TestMigrateGivesExistingStreamsTheReplicasAsked(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := weftest.NewDB(t)
	cluster := weftest.NewNATSCluster(t, 3)
	env := envOf(map[string]string{"WEFT_DATABASE_URL": db.URL, "WEFT_NATS_URL": cluster.URLs()})
	var out, errOut weftest.Buffer
	require.NoError(t, run(ctx, []string{"migrate"}, &out, &errOut, env))
	js := cluster.JetStream(t)
	require.NoError(t, streams.EnsureTaskLanes(ctx, js, streams.Config{}, "default")) // as the engine makes it
	_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "WEFT_HEARTBEATS"})
	require.NoError(t, err)
	_, err = js.Publish(ctx, "weft.tasks.default.acme", []byte("task"))
	require.NoError(t, err)

	out = weftest.Buffer{}
	require.NoError(t, run(ctx, []string{"migrate", "--stream-replicas", "3"}, &out, &errOut, env))
	weft := []string{"KV_WEFT_HEARTBEATS", "WEFT_CANCELS", "WEFT_EVENTS", "WEFT_RESULTS", "WEFT_TASKS", "WEFT_TASKS_default"}
	for _, name := range weft {
		require.Contains(t, out.String(), "stream "+name+": replicas 1 -> 3\n")
		s, err := js.Stream(ctx, name)
		require.NoError(t, err)
		require.Equal(t, 3, s.CachedInfo().Config.Replicas, name)
	}
	s, err := js.Stream(ctx, "WEFT_TASKS_default")
	require.NoError(t, err)
	require.Equal(t, uint64(1), s.CachedInfo().State.Msgs, "the waiting task is kept")

	out = weftest.Buffer{}
	require.NoError(t, run(ctx, []string{"migrate", "--stream-replicas", "3"}, &out, &errOut, env))
	require.Equal(t, "schema is up to date\nstreams are up to date\n", out.String())
}

// On a single server, `weft migrate --stream-replicas 3` fails, saying
// which stream could not have three replicas, what the server said, and
// what to do.
func TestMigrateReplicasOnOneServerFails(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := weftest.NewDB(t)
	srv := weftest.NewNATS(t)
	env := envOf(map[string]string{"WEFT_DATABASE_URL": db.URL, "WEFT_NATS_URL": srv.URL()})
	var out, errOut weftest.Buffer
	require.NoError(t, run(ctx, []string{"migrate"}, &out, &errOut, env))
	require.NoError(t, streams.EnsureTaskLanes(ctx, srv.JetStream(t), streams.Config{}, "default"))

	err := run(ctx, []string{"migrate", "--stream-replicas", "3"}, &out, &errOut, env)
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, "WEFT_EVENTS", "the stream")
	require.Contains(t, msg, "replicas > 1 not supported in non-clustered mode", "what the server said")
	require.Contains(t, msg, "start the cluster first, or run with --stream-replicas", "what to do")
	require.NotContains(t, out.String(), "->", "no stream changed")
}
