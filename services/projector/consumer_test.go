package projector_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/health"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/services/projector"
)

// projectedOverTheBus approves a run, waits for its snapshot, and waits
// until the projector's consumer has delivered and settled a message of
// it: the bus, not a resync from the log, carried it.
func (s *stack) projectedOverTheBus(t *testing.T) {
	t.Helper()
	runID := s.approve(t, "kept")
	s.waitRun(t, runID, atSeq(1), "projected")
	require.Eventually(t, func() bool {
		c, err := s.js.Consumer(t.Context(), streams.EventsStream, projector.Consumer)
		if err != nil {
			return false
		}
		info, err := c.Info(t.Context())
		return err == nil && info.Delivered.Stream >= 1 && info.NumAckPending == 0 && info.NumPending == 0
	}, waitFor, 10*time.Millisecond, "the projector's consumer delivered the run's event")
}

// The projector's consumer deleted under a running projector is created
// again and events flow to snapshots again.
func TestProjectorConsumerDeletedIsCreatedAgain(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	s.projectedOverTheBus(t)

	require.NoError(t, s.js.DeleteConsumer(t.Context(), streams.EventsStream, projector.Consumer))
	s.projectedOverTheBus(t)
}

// WEFT_EVENTS deleted and created again (`weft migrate`) under a running
// projector: /readyz names the missing consumer while the stream is gone,
// and once it is back the consumer is created again and events flow.
func TestProjectorSurvivesItsStreamRecreated(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	s.projectedOverTheBus(t)
	probes, err := health.New(0, health.Stream(s.js, streams.EventsStream),
		health.Consumer(s.js, streams.EventsStream, projector.Consumer))
	require.NoError(t, err)
	require.True(t, probes.Check(t.Context()).Ready())

	require.NoError(t, s.js.DeleteStream(t.Context(), streams.EventsStream))
	require.Equal(t, []string{"stream WEFT_EVENTS", "consumer projector"}, probes.Check(t.Context()).Failing)

	require.NoError(t, streams.Ensure(t.Context(), s.js, streams.Config{MaxBytes: 256 << 20}))
	s.projectedOverTheBus(t)
	require.True(t, probes.Check(t.Context()).Ready())
}

// A projector's durable consumer made by an older build, filtered on
// weft.events.* (a run id after the prefix), is updated in place to
// weft.events.> (which also covers weft.events.<partition>.<runId>): the
// same durable, created when it was, and events flow through it.
func TestProjectorConsumerFilterUpdatedInPlace(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	old, err := s.js.CreateConsumer(t.Context(), streams.EventsStream, jetstream.ConsumerConfig{
		Durable:       projector.Consumer,
		FilterSubject: streams.EventsSubjectPrefix + ".*",
		AckPolicy:     jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	require.NoError(t, err)
	created := old.CachedInfo().Created

	s.serve(t, projector.Config{})
	s.projectedOverTheBus(t)
	c, err := s.js.Consumer(t.Context(), streams.EventsStream, projector.Consumer)
	require.NoError(t, err)
	info, err := c.Info(t.Context())
	require.NoError(t, err)
	require.Equal(t, streams.EventsSubjectPrefix+".>", info.Config.FilterSubject)
	require.Equal(t, created, info.Created, "the durable was updated, not deleted and created again")
}
