package streams_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

const keepWait = 30 * time.Second

// keeping is a test's Keeper of the task consumer of queue "keep", kept
// by Keep until the test ends, with its metrics served by h.
type keeping struct {
	js        jetstream.JetStream
	keeper    *streams.Keeper
	recreated chan jetstream.Consumer
	h         http.Handler
}

// startKeeping ensures the streams and the consumer and keeps it, checking
// every interval.
func startKeeping(t *testing.T, interval time.Duration) *keeping {
	t.Helper()
	js := weftest.NewNATS(t).JetStream(t)
	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{}))
	mp, h, err := metrics.New()
	require.NoError(t, err)
	cc, err := streams.TaskConsumer("keep", 0)
	require.NoError(t, err)
	k, err := streams.NewKeeper(js, streams.TasksStream, cc, streams.KeeperConfig{Interval: interval, MeterProvider: mp})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, k.Close()) })
	_, err = k.Ensure(t.Context())
	require.NoError(t, err)
	return keep(t, js, k, h)
}

// keep runs k.Keep until the test ends.
func keep(t *testing.T, js jetstream.JetStream, k *streams.Keeper, h http.Handler) *keeping {
	t.Helper()
	kp := &keeping{js: js, keeper: k, recreated: make(chan jetstream.Consumer, 16), h: h}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); k.Keep(ctx, func(c jetstream.Consumer) { kp.recreated <- c }) }()
	t.Cleanup(func() { cancel(); <-done })
	return kp
}

// waitRecreated waits for Keep to report the consumer created again and
// returns it.
func (kp *keeping) waitRecreated(t *testing.T) jetstream.Consumer {
	t.Helper()
	select {
	case c := <-kp.recreated:
		return c
	case <-time.After(keepWait):
		t.Fatal("the consumer was not created again")
		return nil
	}
}

// A deleted consumer is created again with its config as soon as a
// consumer reports the deletion, and counted.
func TestKeeperRecreatesADeletedConsumerWhenSuspected(t *testing.T) {
	t.Parallel()
	kp := startKeeping(t, time.Hour) // no timer: the suspicion alone
	require.NoError(t, kp.js.DeleteConsumer(t.Context(), streams.TasksStream, "tasks-keep"))

	kp.keeper.Suspect(errors.New("some other error")) // ignored
	kp.keeper.Suspect(jetstream.ErrConsumerDeleted)
	c := kp.waitRecreated(t)
	require.False(t, kp.keeper.Missing())
	info, err := c.Info(t.Context())
	require.NoError(t, err)
	want, err := streams.TaskConsumer("keep", 0)
	require.NoError(t, err)
	require.Equal(t, want.FilterSubject, info.Config.FilterSubject)
	require.Equal(t, want.AckWait, info.Config.AckWait)
	require.Equal(t, want.MaxDeliver, info.Config.MaxDeliver)

	scrape := metricstest.Get(t, kp.h)
	require.Equal(t, int64(1), scrape.Count(t, "weft_consumer_recreations_total", map[string]string{"consumer": "tasks-keep"}))
	require.Zero(t, scrape.Count(t, "weft_consumer_missing", map[string]string{"consumer": "tasks-keep"}))
}

// A consumer deleted without any consumer noticing is found by the
// periodic check.
func TestKeeperFindsADeletedConsumerOnItsTimer(t *testing.T) {
	t.Parallel()
	kp := startKeeping(t, 20*time.Millisecond)
	require.NoError(t, kp.js.DeleteConsumer(t.Context(), streams.TasksStream, "tasks-keep"))
	kp.waitRecreated(t)
	_, err := kp.js.Consumer(t.Context(), streams.TasksStream, "tasks-keep")
	require.NoError(t, err)
}

// With its stream deleted the consumer is missing, and shown missing,
// until the stream is created again (as `weft migrate` does); then it is
// created again.
func TestKeeperWaitsForADeletedStream(t *testing.T) {
	t.Parallel()
	kp := startKeeping(t, 20*time.Millisecond)
	require.NoError(t, kp.js.DeleteStream(t.Context(), streams.TasksStream))

	metricstest.WaitFor(t, kp.h, keepWait, func(s metricstest.Scrape) bool {
		v, ok := s.Sum("weft_consumer_missing", map[string]string{"consumer": "tasks-keep"})
		return ok && v == 1
	})
	require.True(t, kp.keeper.Missing())
	select {
	case <-kp.recreated:
		t.Fatal("created again without its stream")
	default:
	}

	require.NoError(t, streams.Ensure(t.Context(), kp.js, streams.Config{}))
	kp.waitRecreated(t)
	require.False(t, kp.keeper.Missing())
	scrape := metricstest.Get(t, kp.h)
	require.Zero(t, scrape.Count(t, "weft_consumer_missing", map[string]string{"consumer": "tasks-keep"}))
}

func TestNewKeeperNeedsADurable(t *testing.T) {
	t.Parallel()
	js := weftest.NewNATS(t).JetStream(t)
	_, err := streams.NewKeeper(js, streams.TasksStream, jetstream.ConsumerConfig{}, streams.KeeperConfig{})
	require.ErrorIs(t, err, streams.ErrInvalidConfig)
}

// A consumer whose creation at start fails in a way that may be transient
// (here its stream is not there yet) does not fail Start: it is shown
// missing until Keep creates it, once the stream exists.
func TestKeeperStartLeavesATransientFailureToKeep(t *testing.T) {
	t.Parallel()
	js := weftest.NewNATS(t).JetStream(t) // no streams yet
	mp, h, err := metrics.New()
	require.NoError(t, err)
	cc, err := streams.TaskConsumer("later", 0)
	require.NoError(t, err)
	k, err := streams.NewKeeper(js, streams.TasksStream, cc, streams.KeeperConfig{Interval: time.Hour, MeterProvider: mp})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, k.Close()) })

	cons, err := k.Start(t.Context())
	require.NoError(t, err)
	require.Nil(t, cons)
	require.True(t, k.Missing())
	scrape := metricstest.Get(t, h)
	require.Equal(t, int64(1), scrape.Count(t, "weft_consumer_missing", map[string]string{"consumer": "tasks-later"}))

	kp := keep(t, js, k, h)
	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{}))
	c := kp.waitRecreated(t)
	require.Equal(t, "tasks-later", c.CachedInfo().Name)
	require.False(t, k.Missing())
	scrape = metricstest.Get(t, h)
	require.Zero(t, scrape.Count(t, "weft_consumer_missing", map[string]string{"consumer": "tasks-later"}))
}

// A config the server rejects for good fails Start: no retry can change
// it.
func TestKeeperStartFailsOnARejectedConfig(t *testing.T) {
	t.Parallel()
	js := weftest.NewNATS(t).JetStream(t)
	require.NoError(t, streams.Ensure(t.Context(), js, streams.Config{}))
	cc, err := streams.TaskConsumer("bad", 0)
	require.NoError(t, err)
	cc.DeliverPolicy = jetstream.DeliverByStartSequencePolicy // without OptStartSeq
	k, err := streams.NewKeeper(js, streams.TasksStream, cc, streams.KeeperConfig{})
	require.NoError(t, err)

	_, err = k.Start(t.Context())
	var apiErr *jetstream.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 400, apiErr.Code)
	require.ErrorContains(t, err, "tasks-bad")
	require.False(t, k.Missing())
}
