package streams_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	evs "github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// The server's partition transform and PartitionOf agree: every event is
// stored on the partition PartitionOf names, so an engine can tell which
// partition holds a run without asking the server.
func TestPartitionOfMatchesTheServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := weftest.NewNATS(t).JetStream(t)
	require.NoError(t, streams.Ensure(ctx, js, streams.Config{MaxBytes: 64 << 20, Partitions: 7}))
	events, err := js.Stream(ctx, streams.EventsStream)
	require.NoError(t, err)

	seen := map[int]bool{}
	for i := range 200 {
		runID := fmt.Sprintf("0190a8e2-7b3c-7def-8123-%012d", i)
		typ := []evs.Type{evs.RunApproved, evs.StepCompleted}[i%2]
		subject, err := streams.EventSubject(runID, typ)
		require.NoError(t, err)
		ack, err := js.Publish(ctx, subject, []byte("{}"))
		require.NoError(t, err)
		msg, err := events.GetMsg(ctx, ack.Sequence)
		require.NoError(t, err)
		p := streams.PartitionOf(runID, 7)
		class := map[evs.Type]string{evs.RunApproved: "in", evs.StepCompleted: "out"}[typ]
		require.Equal(t, fmt.Sprintf("weft.events.%d.%s.%s", p, class, runID), msg.Subject)
		got, err := streams.RunOfEventSubject(msg.Subject)
		require.NoError(t, err)
		require.Equal(t, runID, got)
		seen[p] = true
	}
	require.Len(t, seen, 7, "200 runs reach every partition")
	filter, err := streams.RunEventsFilter("0190a8e2-7b3c-7def-8123-000000000007")
	require.NoError(t, err)
	msg, err := events.GetLastMsgForSubject(ctx, filter)
	require.NoError(t, err, "a run's events are found without its partition")
	require.Equal(t, "0190a8e2-7b3c-7def-8123-000000000007", msg.Subject[len(msg.Subject)-36:])
	n, err := streams.Partitions(ctx, js, streams.ResultsStream)
	require.NoError(t, err)
	require.Equal(t, 7, n)
}

// A stream created before partitions is partitioned by Ensure; the
// messages stored before keep their subject, which UnpartitionedFilter
// matches, and so do the ones an older build's outbox rows still publish
// on weft.events.<runId>. P is then fixed: Ensure keeps it and refuses
// another.
func TestEnsurePartitionsAnOldStreamAndFixesP(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := weftest.NewNATS(t).JetStream(t)
	old := streams.Events(streams.Config{MaxBytes: 64 << 20})
	old.SubjectTransform = nil
	_, err := js.CreateStream(ctx, old)
	require.NoError(t, err)
	_, err = streams.Partitions(ctx, js, streams.EventsStream)
	require.Error(t, err, "an old stream is not partitioned")
	_, err = js.Publish(ctx, "weft.events.before", []byte("{}"))
	require.NoError(t, err)

	require.NoError(t, streams.Ensure(ctx, js, streams.Config{MaxBytes: 64 << 20}))
	n, err := streams.Partitions(ctx, js, streams.EventsStream)
	require.NoError(t, err)
	require.Equal(t, streams.DefaultPartitions, n)
	after, err := streams.EventSubject("after", evs.RunApproved)
	require.NoError(t, err)
	_, err = js.Publish(ctx, after, []byte("{}"))
	require.NoError(t, err)

	events, err := js.Stream(ctx, streams.EventsStream)
	require.NoError(t, err)
	p := streams.PartitionOf("after", n)
	for filter, want := range map[string]string{
		streams.UnpartitionedFilter(streams.EventsSubjectPrefix): "weft.events.before",
		streams.EventInputsFilter(p):                             "weft.events." + fmt.Sprint(p) + ".in.after",
	} {
		msg, err := events.GetLastMsgForSubject(ctx, filter)
		require.NoError(t, err, filter)
		require.Equal(t, want, msg.Subject)
	}

	holds, err := streams.Holds(ctx, js, streams.EventsStream, streams.UnpartitionedFilter(streams.EventsSubjectPrefix))
	require.NoError(t, err)
	require.True(t, holds, "the message stored before partitions")
	fresh := weftest.NewNATS(t).JetStream(t)
	require.NoError(t, streams.Ensure(ctx, fresh, streams.Config{MaxBytes: 64 << 20}))
	_, err = fresh.Publish(ctx, after, []byte("{}"))
	require.NoError(t, err)
	holds, err = streams.Holds(ctx, fresh, streams.EventsStream, streams.UnpartitionedFilter(streams.EventsSubjectPrefix))
	require.NoError(t, err)
	require.False(t, holds, "a stream created partitioned")

	require.NoError(t, streams.Ensure(ctx, js, streams.Config{MaxBytes: 64 << 20, Partitions: n}), "the same P")
	require.NoError(t, streams.Ensure(ctx, js, streams.Config{MaxBytes: 32 << 20}), "no P: the stream's")
	require.ErrorIs(t, streams.Ensure(ctx, js, streams.Config{MaxBytes: 64 << 20, Partitions: 4}), streams.ErrPartitionsFixed)
	require.ErrorIs(t, streams.Ensure(ctx, js, streams.Config{Partitions: streams.MaxPartitions + 1}), streams.ErrInvalidConfig)
}

// A stream created partitioned by a build before event classes (every
// event on weft.events.<p>.<runId>) takes the classes when Ensure updates
// it, keeping its P: what it stored keeps its subject, which
// PartitionFilter matches and Holds finds, and new events are stored by
// class, so the engine's filter of its inputs skips the rest.
func TestEnsureClassesTheEventsOfAPartitionedStream(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := weftest.NewNATS(t).JetStream(t)
	old := streams.Events(streams.Config{MaxBytes: 64 << 20, Partitions: 3})
	old.Subjects = []string{"weft.events.*"}
	old.SubjectTransform = &jetstream.SubjectTransformConfig{Source: "weft.events.*", Destination: "weft.events.{{partition(3,1)}}.{{wildcard(1)}}"}
	_, err := js.CreateStream(ctx, old)
	require.NoError(t, err)
	_, err = js.Publish(ctx, "weft.events.r-old", []byte("{}"))
	require.NoError(t, err)
	p := streams.PartitionOf("r-old", 3)

	require.NoError(t, streams.Ensure(ctx, js, streams.Config{MaxBytes: 64 << 20}))
	n, err := streams.Partitions(ctx, js, streams.EventsStream)
	require.NoError(t, err)
	require.Equal(t, 3, n, "the stream's P")
	for _, typ := range []evs.Type{evs.SignalAccepted, evs.RunCompleted} {
		subject, err := streams.EventSubject("r-old", typ)
		require.NoError(t, err)
		_, err = js.Publish(ctx, subject, []byte("{}"))
		require.NoError(t, err)
	}
	holds, err := streams.Holds(ctx, js, streams.EventsStream, streams.PartitionFilter(streams.EventsSubjectPrefix, p))
	require.NoError(t, err)
	require.True(t, holds, "the event stored before classes")
	holds, err = streams.Holds(ctx, js, streams.EventsStream, streams.PartitionFilter(streams.EventsSubjectPrefix, (p+1)%3))
	require.NoError(t, err)
	require.False(t, holds, "another partition held none")

	stream, err := js.Stream(ctx, streams.EventsStream)
	require.NoError(t, err)
	for seq, want := range map[uint64]string{
		1: fmt.Sprintf("weft.events.%d.r-old", p),
		2: fmt.Sprintf("weft.events.%d.in.r-old", p),
		3: fmt.Sprintf("weft.events.%d.out.r-old", p),
	} {
		msg, err := stream.GetMsg(ctx, seq)
		require.NoError(t, err)
		require.Equal(t, want, msg.Subject)
		runID, err := streams.RunOfEventSubject(msg.Subject)
		require.NoError(t, err)
		require.Equal(t, "r-old", runID)
	}
	msg, err := stream.GetLastMsgForSubject(ctx, streams.EventInputsFilter(p))
	require.NoError(t, err)
	require.Equal(t, uint64(2), msg.Sequence, "the inputs' filter takes the SignalAccepted alone")
}
