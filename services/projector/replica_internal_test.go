package projector

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The replay lag is how long ago the oldest primary position the standby
// has not replayed was first read: 0 once it has replayed every reading,
// whatever the time since the primary last wrote, and growing while replay
// is stopped.
func TestReplayLagObserve(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	var l replayLag

	require.Zero(t, l.observe(lsnSample{lsn: 100, at: at(0)}, 100, at(0)), "caught up")
	require.Zero(t, l.observe(lsnSample{lsn: 100, at: at(3600)}, 100, at(3600)), "an idle primary is no lag")

	require.Equal(t, time.Duration(0), l.observe(lsnSample{lsn: 200, at: at(3601)}, 100, at(3601)), "first seen behind")
	require.Equal(t, 2*time.Second, l.observe(lsnSample{lsn: 300, at: at(3603)}, 100, at(3603)), "replay stopped: the lag grows")
	require.Equal(t, 3*time.Second, l.observe(lsnSample{lsn: 300, at: at(3604)}, 150, at(3604)), "behind 200 still")
	require.Equal(t, 2*time.Second, l.observe(lsnSample{lsn: 300, at: at(3605)}, 200, at(3605)), "past 200, behind 300 read at 3603")
	require.Zero(t, l.observe(lsnSample{lsn: 300, at: at(3606)}, 300, at(3606)), "caught up again")
	require.Empty(t, l.samples)

	l.observe(lsnSample{lsn: 500, at: at(3607)}, 300, at(3607))
	require.Zero(t, l.observe(lsnSample{lsn: 50, at: at(3608)}, 50, at(3608)), "another primary, lower positions: start again")
}

// Readings past maxLagSamples are thinned, never the oldest: a standby far
// behind keeps its lag, measured more coarsely.
func TestReplayLagThins(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var l replayLag
	n := 3 * maxLagSamples
	for i := 1; i <= n; i++ {
		lag := l.observe(lsnSample{lsn: int64(i), at: t0.Add(time.Duration(i) * time.Second)}, 0, t0.Add(time.Duration(i)*time.Second))
		require.Equal(t, time.Duration(i-1)*time.Second, lag)
	}
	require.LessOrEqual(t, len(l.samples), maxLagSamples)
	for i := 1; i < len(l.samples); i++ {
		require.Less(t, l.samples[i-1].lsn, l.samples[i].lsn, "positions stay increasing")
	}
	half := int64(n / 2)
	lag := l.observe(lsnSample{lsn: int64(n), at: t0.Add(time.Duration(n) * time.Second)}, half, t0.Add(time.Duration(n)*time.Second))
	require.Positive(t, lag)
	require.LessOrEqual(t, lag, time.Duration(n-int(half)-1)*time.Second, "never more than the true lag")
}
