package streams_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
		subject, err := streams.EventSubject(runID)
		require.NoError(t, err)
		ack, err := js.Publish(ctx, subject, []byte("{}"))
		require.NoError(t, err)
		msg, err := events.GetMsg(ctx, ack.Sequence)
		require.NoError(t, err)
		p := streams.PartitionOf(runID, 7)
		require.Equal(t, fmt.Sprintf("weft.events.%d.%s", p, runID), msg.Subject)
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
// matches. P is then fixed: Ensure keeps it and refuses another.
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
	_, err = js.Publish(ctx, "weft.events.after", []byte("{}"))
	require.NoError(t, err)

	events, err := js.Stream(ctx, streams.EventsStream)
	require.NoError(t, err)
	for filter, want := range map[string]string{
		streams.UnpartitionedFilter(streams.EventsSubjectPrefix):                              "weft.events.before",
		streams.PartitionFilter(streams.EventsSubjectPrefix, streams.PartitionOf("after", n)): "weft.events." + fmt.Sprint(streams.PartitionOf("after", n)) + ".after",
	} {
		msg, err := events.GetLastMsgForSubject(ctx, filter)
		require.NoError(t, err, filter)
		require.Equal(t, want, msg.Subject)
	}

	holds, err := streams.HoldsUnpartitioned(ctx, js, streams.EventsStream, streams.EventsSubjectPrefix)
	require.NoError(t, err)
	require.True(t, holds, "the message stored before partitions")
	fresh := weftest.NewNATS(t).JetStream(t)
	require.NoError(t, streams.Ensure(ctx, fresh, streams.Config{MaxBytes: 64 << 20}))
	_, err = fresh.Publish(ctx, "weft.events.after", []byte("{}"))
	require.NoError(t, err)
	holds, err = streams.HoldsUnpartitioned(ctx, fresh, streams.EventsStream, streams.EventsSubjectPrefix)
	require.NoError(t, err)
	require.False(t, holds, "a stream created partitioned")

	require.NoError(t, streams.Ensure(ctx, js, streams.Config{MaxBytes: 64 << 20, Partitions: n}), "the same P")
	require.NoError(t, streams.Ensure(ctx, js, streams.Config{MaxBytes: 32 << 20}), "no P: the stream's")
	require.ErrorIs(t, streams.Ensure(ctx, js, streams.Config{MaxBytes: 64 << 20, Partitions: 4}), streams.ErrPartitionsFixed)
	require.ErrorIs(t, streams.Ensure(ctx, js, streams.Config{Partitions: streams.MaxPartitions + 1}), streams.ErrInvalidConfig)
}
