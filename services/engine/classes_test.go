package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/outbox/outboxtest"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/engine"
)

// The server delivers the engine the events it reacts to alone (a run's
// RunApproved and SignalAccepted, streams.EngineInput), not the dozen the
// run's log holds: the engine's consumers of WEFT_EVENTS are delivered
// exactly the run's inputs.
func TestEngineIsDeliveredItsInputsAlone(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, parsePlan(t, `{"planId":"inputs","planVersion":"1","steps":[
		{"id":"a","activity":"echo"},
		{"id":"b","activity":"echo","dependsOn":["a"]},
		{"id":"c","kind":"waitSignal","dependsOn":["b"],"signal":"go"}]}`))
	s.waitEvent(t, runID, events.StepStarted)
	s.signal(t, runID, "go", "sig-go", "")
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	var inputs int
	for _, ev := range evs {
		if streams.EngineInput(ev.EventType) {
			inputs++
		}
	}
	require.Equal(t, 2, inputs, "RunApproved and SignalAccepted")

	require.Eventually(t, func() bool { return len(busEvents(t, s.js, runID)) == len(evs) },
		waitFor, 10*time.Millisecond, "every event of the run is on the bus")
	require.Eventually(t, func() bool { return engineEventsDelivered(t, s.js) == uint64(inputs) },
		waitFor, 10*time.Millisecond, "the engine is delivered the run's %d inputs of its %d events", inputs, len(evs))
}

// busEvents returns the events of runID's messages on WEFT_EVENTS, of
// either form (streams.DecodeEvents), as far as the stream holds them now.
func busEvents(t *testing.T, js jetstream.JetStream, runID string) []events.Event {
	t.Helper()
	filter, err := streams.RunEventsFilter(runID)
	require.NoError(t, err)
	c, err := js.OrderedConsumer(t.Context(), streams.EventsStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	require.NoError(t, err)
	var out []events.Event
	for {
		batch, err := c.FetchNoWait(100)
		require.NoError(t, err)
		n := 0
		for m := range batch.Messages() {
			evs, err := streams.DecodeEvents(m.Headers(), m.Data())
			require.NoError(t, err)
			out = append(out, evs...)
			n++
		}
		if n == 0 {
			return out
		}
	}
}

// engineEventsDelivered sums what the engine's consumers of WEFT_EVENTS
// delivered, once none has a delivery waiting for its ack.
func engineEventsDelivered(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	var n uint64
	for p := range streams.DefaultPartitions {
		c, err := js.Consumer(t.Context(), streams.EventsStream, engine.PartitionConsumer(streams.EventsStream, p))
		if err != nil {
			return 0
		}
		info, err := c.Info(t.Context())
		if err != nil || info.NumAckPending > 0 {
			return 0
		}
		n += info.Delivered.Consumer
	}
	return n
}

// An engine upgraded from a build before event classes takes the
// approvals its predecessor left on the bus in the older forms: stored on
// weft.events.<p>.<runId> before Ensure classed the stream, and published
// after it on weft.events.<runId> by an outbox row written before the
// upgrade. The sweep, which would re-drive them, waits longer than the
// test.
func TestEngineTakesEventsStoredBeforeClasses(t *testing.T) {
	t.Parallel()
	n := weftest.NewNATS(t)
	s := &stack{db: weftest.NewDB(t), nats: n, bus: n, js: n.JetStream(t)}
	s.log = eventlog.New(s.db.Pool)
	cfg := streams.Config{MaxBytes: 64 << 20}
	old := streams.Events(cfg)
	old.Subjects = []string{"weft.events.*"}
	old.SubjectTransform = &jetstream.SubjectTransformConfig{Source: "weft.events.*",
		Destination: fmt.Sprintf("weft.events.{{partition(%d,1)}}.{{wildcard(1)}}", streams.DefaultPartitions)}
	_, err := s.js.CreateStream(t.Context(), old)
	require.NoError(t, err)
	p := parsePlan(t, `{"planId":"older","planVersion":"1","steps":[{"id":"a","activity":"echo"}]}`)
	stored := s.startSilently(t, p)
	publishOldApproval(t, s.js, stored)

	require.NoError(t, streams.Ensure(t.Context(), s.js, cfg))
	relayed := s.startSilently(t, p)
	publishOldApproval(t, s.js, relayed)
	outboxtest.StartRelay(t, s.db.Pool, s.js, outbox.RelayConfig{PollInterval: 100 * time.Millisecond})
	s.runEngine(t, engine.Config{SweepInterval: engine.MaxSweepInterval, StallAfter: engine.MaxStallAfter})
	rawWorker(t, s.js, "default", echo)

	for what, runID := range map[string]string{"stored before classes": stored, "published in the old form": relayed} {
		require.Equal(t, events.RunCompleted, terminal(s.waitTerminal(t, runID)), what)
	}
}

// publishOldApproval publishes a run's RunApproved on weft.events.<runId>,
// the subject of a build before event classes.
func publishOldApproval(t *testing.T, js jetstream.JetStream, runID string) {
	t.Helper()
	msg := nats.NewMsg(streams.EventsSubjectPrefix + "." + runID)
	msg.Data = []byte("{}") // the engine reads a RunApproved's run from its subject
	msg.Header.Set(streams.HeaderEventType, string(events.RunApproved))
	msg.Header.Set(streams.HeaderRunSeq, "1")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := js.PublishMsg(ctx, msg)
	require.NoError(t, err)
}
