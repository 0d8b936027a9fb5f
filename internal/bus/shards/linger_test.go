package shards_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/bus/shards"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// With Linger, a shard waits for a full batch: messages published one at
// a time, each after the last one's PubAck, reach the handler as one
// batch. A batch the linger is still filling is handed over when Stop
// closes the shards, without waiting out the linger.
func TestLingerGathersMessagesPublishedApart(t *testing.T) {
	t.Parallel()
	js := weftest.NewNATS(t).JetStream(t)
	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{MaxBytes: 16 << 20}))
	k, err := streams.NewKeeper(js, streams.EventsStream, jetstream.ConsumerConfig{
		Durable: "shards-linger", FilterSubject: streams.AllPartitionsFilter(streams.EventsSubjectPrefix), AckPolicy: jetstream.AckExplicitPolicy,
	}, streams.KeeperConfig{Interval: time.Hour})
	require.NoError(t, err)
	batches := make(chan int, 8)
	l := shards.New(k, 1, 4, func(msgs []jetstream.Msg) {
		for _, m := range msgs {
			if err := m.Ack(); err != nil {
				t.Errorf("ack: %v", err)
			}
		}
		batches <- len(msgs)
	}, shards.Linger(time.Hour))
	require.NoError(t, l.Start(t.Context()))

	subject, err := streams.EventSubject("01a21b00-0000-7000-8000-000000000002", events.RunApproved)
	require.NoError(t, err)
	publish := func(n int) {
		for range n {
			_, err := js.Publish(t.Context(), subject, []byte("x"))
			require.NoError(t, err)
		}
	}
	publish(4)
	select {
	case n := <-batches:
		require.Equal(t, 4, n, "the linger waits for the batch to fill")
	case <-time.After(waitFor):
		t.Fatal("a full batch was not handed over")
	}

	publish(1)
	require.Eventually(t, func() bool {
		info, err := js.Consumer(t.Context(), streams.EventsStream, "shards-linger")
		return err == nil && info.CachedInfo().NumAckPending == 1
	}, waitFor, 10*time.Millisecond, "the fifth message was delivered")
	require.Empty(t, batches, "a batch short of its limit waits for the linger")
	require.NoError(t, l.Stop(context.WithoutCancel(t.Context())))
	require.Equal(t, 1, <-batches, "Stop hands over the batch the linger was filling")
}
