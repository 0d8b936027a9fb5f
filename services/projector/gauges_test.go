package projector_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/projector"
)

// TestGauges scrapes the projector's gauges through the Prometheus
// handler: a run halted on a gap counts in weft.projector.gaps.open until
// the log fills it, and weft.runs counts the snapshots by status, 0 for a
// status no run has.
func TestGauges(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	mp, h, err := metrics.New()
	require.NoError(t, err)
	s.serveWith(t, projector.Config{}, mp)
	runID := s.approve(t, "gap")
	other := s.approve(t, "other")
	s.waitRun(t, runID, atSeq(1), "approved")
	s.openLogGap(t, runID, 1)
	s.waitRun(t, runID, func(v api.RunView) bool { return v.Stale }, "goes STALE")
	s.appendBus(t, lifecycle(t, other)...)
	s.waitRun(t, other, atSeq(6), "the other run completes")

	sc := metricstest.Get(t, h)
	require.Equal(t, int64(1), sc.Count(t, "weft_projector_gaps_open", nil))
	require.Equal(t, int64(1), sc.Count(t, "weft_runs", map[string]string{"status": string(events.RunStatusCompleted)}))
	require.Equal(t, int64(2), sc.Count(t, "weft_runs", nil))
	require.Zero(t, sc.Count(t, "weft_runs", map[string]string{"status": string(events.RunStatusCancelled)}),
		"a status no run has is reported as 0")
	require.Positive(t, sc.Value(t, "weft_projector_lag_seconds_count", nil), "the existing lag histogram is served too")

	s.appendLogAt(t, lifecycle(t, runID)[0], 2) // the log fills its gap: the gap closes
	s.waitRun(t, runID, atSeq(3), "resumes")
	// The gauges are kept for a few seconds (scrapecache): wait for a read
	// after the gap closed.
	metricstest.WaitFor(t, h, waitFor, func(sc metricstest.Scrape) bool {
		v, ok := sc.Sum("weft_projector_gaps_open", nil)
		return ok && v == 0
	})
}
