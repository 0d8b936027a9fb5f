package streams_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestLaneToken(t *testing.T) {
	t.Parallel()
	require.Empty(t, streams.LaneToken(""))
	require.Equal(t, "acme", streams.LaneToken("acme"))
	require.Equal(t, "Acme-2_x", streams.LaneToken("Acme-2_x"))
	at := strings.Repeat("a", 64)
	require.Equal(t, at, streams.LaneToken(at), "64 characters: as it is")
	for _, tenant := range []string{strings.Repeat("a", 65), "_acme", "ac.me", "ac me", "a*", "tenant/1", "é"} {
		tok := streams.LaneToken(tenant)
		require.True(t, strings.HasPrefix(tok, "_"), tenant)
		require.Len(t, tok, 21, tenant)
		require.NoError(t, streams.ValidLaneToken(tok), tenant)
		require.Equal(t, tok, streams.LaneToken(tenant), "stable")
	}
	require.NotEqual(t, streams.LaneToken("_acme"), streams.LaneToken("acme"))
	require.NotEqual(t, streams.LaneToken("a.b"), streams.LaneToken("a*b"))

	require.NoError(t, streams.ValidLaneToken(at))
	require.ErrorIs(t, streams.ValidLaneToken(""), streams.ErrInvalidToken)
	require.ErrorIs(t, streams.ValidLaneToken(strings.Repeat("a", 66)), streams.ErrInvalidToken)
	require.ErrorIs(t, streams.ValidLaneToken("a~b"), streams.ErrInvalidToken)
}

func TestTenantTaskSubject(t *testing.T) {
	t.Parallel()
	s, err := streams.TenantTaskSubject("default", "")
	require.NoError(t, err)
	require.Equal(t, "weft.tasks.default", s)
	s, err = streams.TenantTaskSubject("default", "acme")
	require.NoError(t, err)
	require.Equal(t, "weft.tasks.default.acme", s)
	s, err = streams.TenantTaskSubject("default", "a.b")
	require.NoError(t, err)
	require.Equal(t, "weft.tasks.default."+streams.LaneToken("a.b"), s)
	require.NoError(t, streams.ValidSubject(s))
	_, err = streams.TenantTaskSubject("a.b", "acme")
	require.ErrorIs(t, err, streams.ErrInvalidToken)
	f, err := streams.TaskLanesFilter("default")
	require.NoError(t, err)
	require.Equal(t, "weft.tasks.default.*", f)
}

func TestTaskLaneConsumer(t *testing.T) {
	t.Parallel()
	cc, err := streams.TaskLaneConsumer("default", "acme", 0, 0)
	require.NoError(t, err)
	require.Equal(t, "tasks-default~acme", cc.Durable)
	require.True(t, strings.HasPrefix(cc.Durable, streams.TaskLaneConsumerPrefix("default")))
	require.Equal(t, "weft.tasks.default.acme", cc.FilterSubject)
	require.Equal(t, streams.DefaultTaskAckWait, cc.AckWait)
	require.Equal(t, streams.DefaultTaskMaxDeliver, cc.MaxDeliver)
	require.Equal(t, streams.DefaultLaneInactiveThreshold, cc.InactiveThreshold)

	_, err = streams.TaskLaneConsumer("default", "acme", 0, time.Second)
	require.NoError(t, err, "an InactiveThreshold of a second is allowed")
	_, err = streams.TaskLaneConsumer("default", "acme", 0, time.Second-time.Millisecond)
	require.ErrorIs(t, err, streams.ErrInvalidConfig)
	_, err = streams.TaskLaneConsumer("de~fault", "acme", 0, 0)
	require.ErrorIs(t, err, streams.ErrInvalidToken)
	_, err = streams.TaskLaneConsumer("default", "a.b", 0, 0)
	require.ErrorIs(t, err, streams.ErrInvalidToken)
}

// A queue's lanes live in a stream of their own beside WEFT_TASKS, which
// keeps the queue's tasks of no tenant: each consumer reads its own
// subject. A WEFT_TASKS an earlier build widened to weft.tasks.> is
// narrowed back by Ensure, so the lanes stream can take the lanes.
func TestTaskLanesStreamBesideTasks(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := weftest.NewNATS(t).JetStream(t)
	cfg := streams.Config{MaxBytes: 64 << 20}
	wide := streams.Tasks(cfg)
	wide.Subjects = []string{"weft.tasks.>"}
	_, err := js.CreateStream(ctx, wide)
	require.NoError(t, err)
	require.NoError(t, streams.Ensure(ctx, js, cfg))
	require.NoError(t, streams.EnsureTaskLanes(ctx, js, cfg, "default"))
	require.NoError(t, streams.EnsureTaskLanes(ctx, js, cfg, "default"), "idempotent")
	s, err := js.Stream(ctx, streams.TasksStream)
	require.NoError(t, err)
	require.Equal(t, []string{"weft.tasks.*"}, s.CachedInfo().Config.Subjects)

	_, err = js.Publish(ctx, "weft.tasks.default", []byte("legacy"))
	require.NoError(t, err)
	ack, err := js.Publish(ctx, "weft.tasks.default.acme", []byte("lane"))
	require.NoError(t, err)
	require.Equal(t, "WEFT_TASKS_default", ack.Stream)
	_, err = js.Publish(ctx, "weft.tasks.other.acme", []byte("lost"))
	require.Error(t, err, "a queue whose lanes stream does not exist yet captures nothing")

	queue, err := streams.TaskConsumer("default", 0)
	require.NoError(t, err)
	lane, err := streams.TaskLaneConsumer("default", "acme", 0, 0)
	require.NoError(t, err)
	for want, c := range map[string]struct {
		stream string
		cc     jetstream.ConsumerConfig
	}{"legacy": {streams.TasksStream, queue}, "lane": {streams.TaskLanesStream("default"), lane}} {
		cons, err := js.CreateOrUpdateConsumer(ctx, c.stream, c.cc)
		require.NoError(t, err)
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		require.NoError(t, err)
		require.Equal(t, want, string(msg.Data()))
		require.NoError(t, msg.DoubleAck(ctx))
	}
	require.Equal(t, "WEFT_TASKS__"+streams.LaneToken("a/b")[1:], streams.TaskLanesStream("a/b"), "a queue that is no plain token is hashed")
}
