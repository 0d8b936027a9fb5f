package streams_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

func TestEventsDefinition(t *testing.T) {
	t.Parallel()
	sc := streams.Events(streams.Config{})
	require.Equal(t, streams.EventsStream, sc.Name)
	require.Equal(t, []string{"weft.events.*.*", "weft.events.*"}, sc.Subjects)
	require.Equal(t, jetstream.FileStorage, sc.Storage)
	require.Equal(t, jetstream.DiscardNew, sc.Discard)
	require.Equal(t, jetstream.LimitsPolicy, sc.Retention)
	require.Equal(t, streams.DefaultMaxBytes, sc.MaxBytes)
	require.Equal(t, streams.DefaultMaxAge, sc.MaxAge)
	require.Equal(t, streams.DefaultDuplicates, sc.Duplicates)
	require.Equal(t, 1, sc.Replicas)
	require.True(t, sc.DenyDelete)
	require.True(t, sc.DenyPurge)

	custom := streams.Events(streams.Config{MaxAge: time.Hour, MaxBytes: 1 << 20, Duplicates: time.Minute, Replicas: 3})
	require.Equal(t, time.Hour, custom.MaxAge)
	require.Equal(t, int64(1<<20), custom.MaxBytes)
	require.Equal(t, time.Minute, custom.Duplicates)
	require.Equal(t, 3, custom.Replicas)
}

func TestTasksAndResultsDefinitions(t *testing.T) {
	t.Parallel()
	tasks := streams.Tasks(streams.Config{})
	require.Equal(t, streams.TasksStream, tasks.Name)
	require.Equal(t, []string{"weft.tasks.*"}, tasks.Subjects)
	lanes, err := streams.TaskLanes(streams.Config{}, "default")
	require.NoError(t, err)
	require.Equal(t, "WEFT_TASKS_default", lanes.Name)
	require.Equal(t, []string{"weft.tasks.default.*"}, lanes.Subjects)
	require.Equal(t, jetstream.WorkQueuePolicy, lanes.Retention)
	require.Equal(t, streams.DefaultLanesMaxBytes, lanes.MaxBytes, "one per queue, each reserved up front: smaller than the others")
	lanes, err = streams.TaskLanes(streams.Config{LanesMaxBytes: 64 << 20}, "default")
	require.NoError(t, err)
	require.Equal(t, int64(64<<20), lanes.MaxBytes)
	require.ErrorIs(t, streams.Config{LanesMaxBytes: -1}.Validate(), streams.ErrInvalidConfig)
	_, err = streams.TaskLanes(streams.Config{}, "a.b")
	require.Error(t, err)
	require.Equal(t, jetstream.WorkQueuePolicy, tasks.Retention, "a task leaves the stream once acked")
	require.False(t, tasks.DenyDelete, "an operator may delete a poison task")
	results := streams.Results(streams.Config{})
	require.Equal(t, streams.ResultsStream, results.Name)
	require.Equal(t, []string{"weft.results.*"}, results.Subjects)
	for _, sc := range []jetstream.StreamConfig{tasks, results} {
		require.Equal(t, jetstream.FileStorage, sc.Storage, sc.Name)
		require.Equal(t, jetstream.DiscardNew, sc.Discard, sc.Name)
		require.Equal(t, streams.DefaultDuplicates, sc.Duplicates, sc.Name)
	}
	var names []string
	for _, sc := range streams.All(streams.Config{}) {
		names = append(names, sc.Name)
	}
	require.Equal(t, []string{"WEFT_EVENTS", "WEFT_TASKS", "WEFT_RESULTS", "WEFT_CANCELS"}, names)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, streams.Config{}.Validate())
	for name, cfg := range map[string]streams.Config{
		"negative age":        {MaxAge: -time.Second},
		"negative bytes":      {MaxBytes: -1},
		"negative window":     {Duplicates: -time.Second},
		"window beyond age":   {MaxAge: time.Minute, Duplicates: 2 * time.Minute},
		"too many replicas":   {Replicas: 7},
		"negative replicas":   {Replicas: -1},
		"default window, age": {MaxAge: time.Minute},
	} {
		require.ErrorIs(t, cfg.Validate(), streams.ErrInvalidConfig, name)
	}
}

func TestEnsure(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := weftest.NewNATS(t).JetStream(t)

	cfg := streams.Config{MaxBytes: 64 << 20}
	require.NoError(t, streams.Ensure(ctx, js, cfg))
	require.NoError(t, streams.Ensure(ctx, js, cfg), "Ensure is idempotent")

	for _, name := range []string{streams.TasksStream, streams.ResultsStream, streams.CancelsStream} {
		_, err := js.Stream(ctx, name)
		require.NoError(t, err, "Ensure creates %s", name)
	}
	s, err := js.Stream(ctx, streams.EventsStream)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"weft.events.*.*", "weft.events.*"}, info.Config.Subjects)
	require.Equal(t, int64(64<<20), info.Config.MaxBytes)
	require.Equal(t, jetstream.DiscardNew, info.Config.Discard)
	require.True(t, info.Config.DenyPurge)
	require.True(t, info.Config.DenyDelete)

	// A changed limit is applied in place.
	require.NoError(t, streams.Ensure(ctx, js, streams.Config{MaxBytes: 128 << 20}))
	info, err = s.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(128<<20), info.Config.MaxBytes)

	// Purge is refused by the server.
	require.Error(t, s.Purge(ctx))

	require.ErrorIs(t, streams.Ensure(ctx, js, streams.Config{Replicas: 9}), streams.ErrInvalidConfig)
}

func TestTaskConsumer(t *testing.T) {
	t.Parallel()
	cc, err := streams.TaskConsumer("default", 0)
	require.NoError(t, err)
	require.Equal(t, "tasks-default", cc.Durable)
	require.Equal(t, "weft.tasks.default", cc.FilterSubject)
	require.Equal(t, jetstream.AckExplicitPolicy, cc.AckPolicy)
	require.Equal(t, streams.DefaultTaskAckWait, cc.AckWait)
	require.Equal(t, streams.DefaultTaskMaxDeliver, cc.MaxDeliver)

	_, err = streams.TaskConsumer("a.b", 0)
	require.ErrorIs(t, err, streams.ErrInvalidToken)
	_, err = streams.TaskConsumer("q", time.Millisecond)
	require.ErrorIs(t, err, streams.ErrInvalidConfig)
}
