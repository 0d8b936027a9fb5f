package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest"
)

// recentCancels keeps maxRecentCancels runs' notices; one more forgets the
// oldest run's, and a run's later notice replaces its earlier one in place.
func TestRecentCancelsBound(t *testing.T) {
	t.Parallel()
	var r recentCancels
	run := func(i int) string { return fmt.Sprintf("run-%d", i) }
	for i := range maxRecentCancels {
		r.add(task.Cancel{RunID: run(i)})
	}
	for _, i := range []int{0, maxRecentCancels - 1} {
		_, ok := r.get(run(i))
		require.True(t, ok, "at the bound every notice is remembered (run %d)", i)
	}
	r.add(task.Cancel{RunID: run(0), Reason: "again"}) // not a new run: nothing forgotten
	c, ok := r.get(run(0))
	require.True(t, ok)
	require.Equal(t, "again", c.Reason)

	r.add(task.Cancel{RunID: run(maxRecentCancels)})
	_, ok = r.get(run(0))
	require.False(t, ok, "one past the bound forgets the oldest run")
	for _, i := range []int{1, maxRecentCancels} {
		_, ok := r.get(run(i))
		require.True(t, ok, "run %d", i)
	}
}

// After a failed lookup (here: no WEFT_CANCELS yet) lookups pause for
// cancelLookupPause: one just inside it fails at once without a request;
// one at its end reaches the stream again.
func TestCancelLookupPause(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	js := weftest.NewNATS(t).JetStream(t)
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	now := t0
	l := cancelLookup{now: func() time.Time { return now }}

	_, _, err := l.last(ctx, js, "run-1")
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
	require.NoError(t, streams.Ensure(ctx, js, streams.Config{MaxBytes: 16 << 20}))

	now = t0.Add(cancelLookupPause - time.Nanosecond)
	_, _, err = l.last(ctx, js, "run-1")
	require.ErrorIs(t, err, errLookupPaused, "inside the pause")

	now = t0.Add(cancelLookupPause)
	_, ok, err := l.last(ctx, js, "run-1")
	require.NoError(t, err, "the pause is over")
	require.False(t, ok)
	_, err = js.Publish(ctx, "weft.cancel.run-1", []byte(`{"schemaVersion":1,"runId":"run-1","reason":"stop"}`))
	require.NoError(t, err)
	c, ok, err := l.last(ctx, js, "run-1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "stop", c.Reason)
}

// BenchmarkCancelLookup measures the check a worker makes before it starts
// an attempt whose run it has heard no notice of: one direct get of the
// last message on weft.cancel.<runId> from WEFT_CANCELS, on an embedded
// server over loopback, with the stream holding 10,000 notices. The run
// has none (the common case: the get answers "not found").
func BenchmarkCancelLookup(b *testing.B) {
	srv := weftest.NewNATS(b)
	js := srv.JetStream(b)
	ctx := context.Background()
	require.NoError(b, streams.Ensure(ctx, js, streams.Config{MaxBytes: 64 << 20}))
	for i := range 10_000 {
		c := task.Cancel{SchemaVersion: 1, RunID: fmt.Sprintf("cancelled-%d", i), StepIDs: []string{"a"}}
		data, err := json.Marshal(c)
		require.NoError(b, err)
		_, err = js.Publish(ctx, "weft.cancel."+c.RunID, data)
		require.NoError(b, err)
	}
	var l cancelLookup
	for _, tc := range []struct{ name, run string }{{"none", "live-run"}, {"cancelled", "cancelled-5000"}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				_, ok, err := l.last(ctx, js, tc.run)
				if err != nil || ok != (tc.name == "cancelled") {
					b.Fatal(ok, err)
				}
			}
		})
	}
}
