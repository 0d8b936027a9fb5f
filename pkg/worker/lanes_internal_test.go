package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// A lane whose consumer cannot be created (here its lanes stream is
// missing) is left for laneRetryMin, then twice as long after each failure
// in a row, up to laneRetryMax; once created, its wait is forgotten.
func TestLaneRetryBacksOff(t *testing.T) {
	t.Parallel()
	js := weftest.NewNATS(t).JetStream(t)
	w, err := New(js, Config{})
	require.NoError(t, err)
	ls, err := newLanes(w, nil)
	require.NoError(t, err)

	want := laneRetryMin
	for range 8 {
		before := time.Now()
		require.Nil(t, ls.lane(t.Context(), "acme"), "no lanes stream: no lane")
		require.Equal(t, want, ls.wait["acme"])
		require.False(t, ls.failed["acme"].Before(before.Add(want)), "left for %v", want)
		require.Nil(t, ls.lane(t.Context(), "acme"), "not tried again before its wait ends")
		require.Equal(t, want, ls.wait["acme"])
		ls.failed["acme"] = time.Time{} // its wait has ended
		want = min(2*want, laneRetryMax)
	}
	require.Equal(t, laneRetryMax, ls.wait["acme"])

	require.NoError(t, streams.EnsureTaskLanes(t.Context(), js, streams.Config{LanesMaxBytes: 16 << 20}, w.cfg.Queue))
	require.NotNil(t, ls.lane(t.Context(), "acme"))
	require.NotContains(t, ls.wait, "acme")
	require.NotContains(t, ls.failed, "acme")
}
