package shards_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/health"
	"github.com/weftrun/weft/internal/bus/shards"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/startstop"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

const waitFor = 30 * time.Second

// Shards deliver a run's messages, and go on delivering after their
// consumer was deleted (nats.go ends the Consume then): the keeper creates
// it again and the shards consume the new one. Stop ends everything.
func TestLanesConsumeTheConsumerCreatedAgain(t *testing.T) {
	t.Parallel()
	js := weftest.NewNATS(t).JetStream(t)
	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{MaxBytes: 16 << 20}))
	_, got := startAcking(t, js, "shards-test") // its keeper finds a deletion by the Consume's error alone

	publish := func(data string) {
		t.Helper()
		subject, err := streams.EventSubject("01a21b00-0000-7000-8000-000000000001", events.RunApproved)
		require.NoError(t, err)
		_, err = js.Publish(t.Context(), subject, []byte(data))
		require.NoError(t, err)
	}
	// receive waits for want, skipping other messages: a consumer created
	// again delivers the stream from its start, in no promised order.
	receive := func(want string) {
		t.Helper()
		deadline := time.After(waitFor)
		for {
			select {
			case m := <-got:
				if m == want {
					return
				}
			case <-deadline:
				t.Fatalf("%s was not delivered", want)
			}
		}
	}
	publish("one")
	receive("one")

	require.NoError(t, js.DeleteConsumer(t.Context(), streams.EventsStream, "shards-test"))
	require.Eventually(t, func() bool {
		_, err := js.Consumer(t.Context(), streams.EventsStream, "shards-test")
		return err == nil
	}, waitFor, 10*time.Millisecond, "the consumer is created again")
	publish("two")
	receive("two")
}

// Shards started while their consumer cannot be created (its stream not
// there yet: a failure that may be transient) start anyway, with the
// consumer missing and the readiness check failing, and consume once the
// keeper has created it.
func TestLanesStartWhileTheirConsumerCannotBeCreated(t *testing.T) {
	t.Parallel()
	js := weftest.NewNATS(t).JetStream(t) // no streams yet
	k, got := startAcking(t, js, "shards-late")
	probes, err := health.New(0, health.Consumer(js, streams.EventsStream, "shards-late"))
	require.NoError(t, err)
	require.Equal(t, []string{"consumer shards-late"}, probes.Check(t.Context()).Failing)

	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{MaxBytes: 16 << 20}))
	subject, err := streams.EventSubject("01a21b00-0000-7000-8000-000000000002", events.RunApproved)
	require.NoError(t, err)
	_, err = js.Publish(t.Context(), subject, []byte("first"))
	require.NoError(t, err)
	select {
	case m := <-got:
		require.Equal(t, "first", m)
	case <-time.After(waitFor):
		t.Fatal("nothing was delivered")
	}
	require.True(t, probes.Check(t.Context()).Ready())
	require.False(t, k.Missing())
}

// startAcking starts 2 shards on the durable consumer named durable of the
// events stream, kept by a keeper that never checks on its own, and
// returns the keeper and the data of each message they ack.
func startAcking(t *testing.T, js jetstream.JetStream, durable string) (*streams.Keeper, <-chan string) {
	t.Helper()
	k, err := streams.NewKeeper(js, streams.EventsStream, jetstream.ConsumerConfig{
		Durable: durable, FilterSubject: streams.AllPartitionsFilter(streams.EventsSubjectPrefix), AckPolicy: jetstream.AckExplicitPolicy,
	}, streams.KeeperConfig{Interval: time.Hour})
	require.NoError(t, err)
	got := make(chan string, 16)
	l := shards.New(k, 2, 4, func(msgs []jetstream.Msg) {
		for _, m := range msgs {
			got <- string(m.Data())
			if err := m.Ack(); err != nil {
				t.Errorf("ack: %v", err)
			}
		}
	})
	require.NoError(t, l.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, l.Stop(context.WithoutCancel(t.Context()))) })
	return k, got
}

// Stop drains and is idempotent (a second Stop once closed the shards
// twice and panicked); stopped shards do not start again.
func TestLanesStopTwice(t *testing.T) {
	t.Parallel()
	js := weftest.NewNATS(t).JetStream(t)
	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{MaxBytes: 16 << 20}))
	k, err := streams.NewKeeper(js, streams.EventsStream, jetstream.ConsumerConfig{
		Durable: "shards-stop", FilterSubject: streams.AllPartitionsFilter(streams.EventsSubjectPrefix), AckPolicy: jetstream.AckExplicitPolicy,
	}, streams.KeeperConfig{Interval: time.Hour})
	require.NoError(t, err)
	l := shards.New(k, 2, 4, func([]jetstream.Msg) {})
	require.NoError(t, l.Stop(t.Context()), "stopping shards never started is a no-op")
	require.NoError(t, l.Start(t.Context()))
	<-l.Started()
	require.NoError(t, l.Stop(t.Context()))
	<-l.Stopped()
	require.NoError(t, l.Stop(t.Context()))
	require.ErrorIs(t, l.Start(t.Context()), startstop.ErrAlreadyStarted)
}
