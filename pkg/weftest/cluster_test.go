package weftest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// clusterStreams are Weft's streams at R3, small enough that three nodes
// on one disk can reserve them.
var clusterStreams = streams.Config{Replicas: 3, MaxBytes: 64 << 20, LanesMaxBytes: 16 << 20, CancelsMaxBytes: 16 << 20}

// TestNATSClusterKillsEachRoleWithoutLosingAnAck kills (SIGKILL), in
// turn, the node that leads WEFT_EVENTS, the meta leader and a follower of
// a 3-node cluster while a client publishes, restarting each before the
// next. Every
// publish the cluster acknowledged is in the stream exactly once (each
// message carries a Nats-Msg-Id and is retried until acknowledged), and
// the stream keeps three replicas.
func TestNATSClusterKillsEachRoleWithoutLosingAnAck(t *testing.T) {
	c := weftest.NewNATSCluster(t, 3)
	js := c.JetStream(t)
	ctx := t.Context()
	require.NoError(t, streams.Ensure(ctx, js, clusterStreams))

	p := &publisher{js: js}
	roles := []struct {
		name string
		pick func() int
	}{
		{"stream leader", func() int { return c.StreamLeader(ctx, js, streams.EventsStream) }},
		{"meta leader", func() int { return c.MetaLeader(ctx) }},
		{"follower", func() int { return follower(ctx, c, js) }},
	}
	for _, role := range roles {
		p.publish(ctx, t, 50)
		victim := role.pick()
		require.GreaterOrEqual(t, victim, 0, "the cluster has a %s", role.name)
		c.Kill(victim)
		start := time.Now()
		p.publish(ctx, t, 1)
		t.Logf("%s (node %d) killed: publishing resumed after %v", role.name, victim, time.Since(start).Round(time.Millisecond))
		p.publish(ctx, t, 50)
		c.Start(victim)
		c.WaitReady()
	}

	info, err := js.Stream(ctx, streams.EventsStream)
	require.NoError(t, err)
	state := info.CachedInfo()
	require.Equal(t, uint64(p.acked), state.State.Msgs, "every acknowledged publish is in the stream once")
	require.Equal(t, 3, state.Config.Replicas)
}

// follower is a running node that leads neither the meta group nor
// WEFT_EVENTS, or -1.
func follower(ctx context.Context, c *weftest.NATSCluster, js jetstream.JetStream) int {
	for i := range c.Size() {
		if c.Running(i) && i != c.MetaLeader(ctx) && i != c.StreamLeader(ctx, js, streams.EventsStream) {
			return i
		}
	}
	return -1
}

// publisher publishes numbered events, each retried under its own
// Nats-Msg-Id until the cluster acknowledges it.
type publisher struct {
	js    jetstream.JetStream
	acked int
}

// publishRetry bounds how long one publish may keep failing while the
// cluster elects a new leader.
const publishRetry = 30 * time.Second

func (p *publisher) publish(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	for range n {
		subject, err := streams.EventSubject(fmt.Sprintf("run-%d", p.acked%7), events.StepCompleted)
		require.NoError(t, err)
		msg := &nats.Msg{Subject: subject, Data: []byte("{}"), Header: nats.Header{}}
		msg.Header.Set(nats.MsgIdHdr, fmt.Sprintf("event-%d", p.acked))
		deadline := time.Now().Add(publishRetry)
		for {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := p.js.PublishMsg(pctx, msg)
			cancel()
			if err == nil {
				break
			}
			require.True(t, time.Now().Before(deadline), "publish %d still fails after %v: %v", p.acked, publishRetry, err)
		}
		p.acked++
	}
}
