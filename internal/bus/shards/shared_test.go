package shards_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/bus/shards"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/startstop"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// Shared shards consume the consumers added to them. Remove waits until
// the shards have handled what the removed consumer delivered (or its
// context ends); the consumer's later messages wait on the server for the
// next one to consume it.
func TestSharedLanesAddAndRemoveConsumers(t *testing.T) {
	t.Parallel()
	js := weftest.NewNATS(t).JetStream(t)
	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{MaxBytes: 16 << 20, Partitions: 2}))
	got, release := make(chan string, 16), make(chan struct{})
	l := shards.NewShared(2, 4, func(msgs []jetstream.Msg) {
		for _, m := range msgs {
			got <- string(m.Data())
			<-release
			if err := m.Ack(); err != nil {
				t.Errorf("ack: %v", err)
			}
		}
	})
	require.ErrorIs(t, l.Add(t.Context(), partitionKeeper(t, js, 0)), shards.ErrNotRunning, "not started")
	require.NoError(t, l.Start(t.Context()))
	t.Cleanup(func() {
		close(release)
		require.NoError(t, l.Stop(context.WithoutCancel(t.Context())))
	})
	runs := [2]string{runOfPartition(0, 2), runOfPartition(1, 2)}
	for p := range 2 {
		require.NoError(t, l.Add(t.Context(), partitionKeeper(t, js, p)))
	}
	require.NoError(t, l.Add(t.Context(), partitionKeeper(t, js, 1)), "adding a consumer twice is a no-op")
	require.ElementsMatch(t, []string{"part-0", "part-1"}, l.Consumers())

	publish(t, js, runs[0], "zero")
	require.Equal(t, "zero", receive(t, got))
	cut, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, l.Remove(cut, "part-0"), startstop.ErrDrainCutShort, "its message is still in the handler")
	require.Equal(t, []string{"part-1"}, l.Consumers())
	release <- struct{}{}

	publish(t, js, runs[0], "zero-later")
	publish(t, js, runs[1], "one")
	require.Equal(t, "one", receive(t, got), "partition 1 is still consumed; partition 0 is not")
	release <- struct{}{}
	require.NoError(t, l.Add(t.Context(), partitionKeeper(t, js, 0)))
	require.Equal(t, "zero-later", receive(t, got), "added again, partition 0 delivers what waited")
	release <- struct{}{}
	require.NoError(t, l.Remove(t.Context(), "part-0"))
	require.NoError(t, l.Remove(t.Context(), "part-0"), "removing a consumer not consumed is a no-op")
}

func partitionKeeper(t *testing.T, js jetstream.JetStream, p int) *streams.Keeper {
	t.Helper()
	k, err := streams.NewKeeper(js, streams.EventsStream, jetstream.ConsumerConfig{
		Durable:       "part-" + string(rune('0'+p)),
		FilterSubject: streams.EventInputsFilter(p),
		AckPolicy:     jetstream.AckExplicitPolicy,
	}, streams.KeeperConfig{Interval: time.Hour})
	require.NoError(t, err)
	return k
}

// runOfPartition returns a run id in partition p of n.
func runOfPartition(p, n int) string {
	for i := 0; ; i++ {
		id := "01a21b00-0000-7000-8000-0000000000" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if streams.PartitionOf(id, n) == p {
			return id
		}
	}
}

func publish(t *testing.T, js jetstream.JetStream, runID, data string) {
	t.Helper()
	subject, err := streams.EventSubject(runID, events.RunApproved)
	require.NoError(t, err)
	_, err = js.Publish(t.Context(), subject, []byte(data))
	require.NoError(t, err)
}

func receive(t *testing.T, got <-chan string) string {
	t.Helper()
	select {
	case m := <-got:
		return m
	case <-time.After(waitFor):
		t.Fatal("nothing was delivered")
		return ""
	}
}
