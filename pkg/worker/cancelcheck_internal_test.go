package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/weftest"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
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
