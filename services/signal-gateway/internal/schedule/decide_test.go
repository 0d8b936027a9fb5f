package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/schedule"
)

// hourly is a policy of "0 * * * *" in UTC with a one-minute grace.
func hourly(t *testing.T, misfire, overlap string, maxCatchup int) schedule.Policy {
	t.Helper()
	c, err := schedule.ParseCron("0 * * * *", "UTC")
	require.NoError(t, err)
	return schedule.Policy{Cron: c, Misfire: misfire, Overlap: overlap, MaxCatchup: maxCatchup, Grace: time.Minute}
}

// at is 2 March 2026 at h:m UTC.
func at(h, m int) time.Time { return time.Date(2026, 3, 2, h, m, 0, 0, time.UTC) }

// fireTimes lists the fire times a decision starts, in order.
func fireTimes(d schedule.Decision) []time.Time {
	var out []time.Time
	for _, a := range d.Actions {
		out = append(out, a.Fire.ScheduledFor)
	}
	return out
}

func TestDecideOnTime(t *testing.T) {
	t.Parallel()
	p := hourly(t, api.MisfireSkip, api.OverlapSkip, 0)
	d := schedule.Decide(schedule.State{NextFireAt: at(9, 0)}, p, at(9, 0).Add(30*time.Second))
	require.Equal(t, []time.Time{at(9, 0)}, fireTimes(d))
	require.Empty(t, d.Skips)
	require.Equal(t, at(10, 0), d.NextFireAt)

	d = schedule.Decide(schedule.State{NextFireAt: at(10, 0)}, p, at(9, 59))
	require.Empty(t, d.Actions, "nothing is due")
	require.Equal(t, at(10, 0), d.NextFireAt)
}

// TestDecideMisfirePolicies: the scheduler was down from before 10:00 to
// 14:00:30; 10:00 to 13:00 are missed, 14:00 is on time.
func TestDecideMisfirePolicies(t *testing.T) {
	t.Parallel()
	now := at(14, 0).Add(30 * time.Second)
	s := schedule.State{NextFireAt: at(10, 0)}

	d := schedule.Decide(s, hourly(t, api.MisfireSkip, api.OverlapAllow, 0), now)
	require.Equal(t, []time.Time{at(14, 0)}, fireTimes(d), "skip: only the on-time fire")
	require.Equal(t, []api.SkippedFires{{Reason: api.SkipMisfire, From: at(10, 0), To: at(13, 0), Count: 4}}, d.Skips)
	require.Equal(t, at(15, 0), d.NextFireAt)

	d = schedule.Decide(s, hourly(t, api.MisfireCatchup, api.OverlapAllow, 2), now)
	require.Equal(t, []time.Time{at(12, 0), at(13, 0), at(14, 0)}, fireTimes(d),
		"catchup: the newest two missed, oldest first, then the on-time one")
	require.Equal(t, []api.SkippedFires{{Reason: api.SkipCatchupLimit, From: at(10, 0), To: at(11, 0), Count: 2}}, d.Skips)

	d = schedule.Decide(s, hourly(t, api.MisfireCompress, api.OverlapAllow, 0), now)
	require.Len(t, d.Actions, 1, "compress: one run")
	require.Equal(t, schedule.Fire{ScheduledFor: at(14, 0),
		Window: &api.FireWindow{From: at(10, 0), To: at(14, 0), MissedCount: 4}}, d.Actions[0].Fire)
	require.Empty(t, d.Skips)
}

// TestDecideCatchupRespectsOverlap: a catch-up's runs meet the overlap
// policy too, each being the previous one of the next.
func TestDecideCatchupRespectsOverlap(t *testing.T) {
	t.Parallel()
	s := schedule.State{NextFireAt: at(10, 0)}
	now := at(12, 30)
	d := schedule.Decide(s, hourly(t, api.MisfireCatchup, api.OverlapSkip, 10), now)
	require.Equal(t, []time.Time{at(10, 0)}, fireTimes(d))
	require.Equal(t, []api.SkippedFires{{Reason: api.SkipOverlap, From: at(11, 0), To: at(12, 0), Count: 2}}, d.Skips)

	d = schedule.Decide(s, hourly(t, api.MisfireCatchup, api.OverlapBufferOne, 10), now)
	require.Equal(t, []time.Time{at(10, 0)}, fireTimes(d))
	require.Equal(t, &schedule.Fire{ScheduledFor: at(11, 0)}, d.Buffered)
	require.Equal(t, int64(1), d.Skips[0].Count)

	d = schedule.Decide(s, hourly(t, api.MisfireCatchup, api.OverlapCancelPrevious, 10), now)
	require.Len(t, d.Actions, 3)
	require.Equal(t, []bool{false, true, true},
		[]bool{d.Actions[0].CancelPrevious, d.Actions[1].CancelPrevious, d.Actions[2].CancelPrevious})
}

func TestDecideOverlapPolicies(t *testing.T) {
	t.Parallel()
	now := at(10, 0)
	active := schedule.State{NextFireAt: at(10, 0), PrevActive: true}
	for _, tc := range []struct {
		overlap  string
		fires    int
		cancel   bool
		buffered bool
		skipped  int64
	}{
		{api.OverlapSkip, 0, false, false, 1},
		{api.OverlapBufferOne, 0, false, true, 0},
		{api.OverlapAllow, 1, false, false, 0},
		{api.OverlapCancelPrevious, 1, true, false, 0},
	} {
		d := schedule.Decide(active, hourly(t, api.MisfireSkip, tc.overlap, 0), now)
		require.Len(t, d.Actions, tc.fires, tc.overlap)
		if tc.fires > 0 {
			require.Equal(t, tc.cancel, d.Actions[0].CancelPrevious, tc.overlap)
		}
		require.Equal(t, tc.buffered, d.Buffered != nil, tc.overlap)
		var skipped int64
		for _, sk := range d.Skips {
			skipped += sk.Count
		}
		require.Equal(t, tc.skipped, skipped, tc.overlap)
	}

	// buffer-one holds one fire: a second while the run is active is
	// skipped; once the run ends the held one starts first.
	held := &schedule.Fire{ScheduledFor: at(10, 0)}
	p := hourly(t, api.MisfireSkip, api.OverlapBufferOne, 0)
	d := schedule.Decide(schedule.State{NextFireAt: at(11, 0), Buffered: held, PrevActive: true}, p, at(11, 0))
	require.Empty(t, d.Actions)
	require.Equal(t, held, d.Buffered)
	require.Equal(t, api.SkipOverlap, d.Skips[0].Reason)
	d = schedule.Decide(schedule.State{NextFireAt: at(12, 0), Buffered: held}, p, at(11, 30))
	require.Equal(t, []time.Time{at(10, 0)}, fireTimes(d), "the run ended: the held fire starts")
	require.Nil(t, d.Buffered)
	require.Equal(t, at(12, 0), d.NextFireAt)
}

func TestDecideMaxScanBoundsALongDowntime(t *testing.T) {
	t.Parallel()
	c, err := schedule.ParseCron("* * * * *", "UTC")
	require.NoError(t, err)
	p := schedule.Policy{Cron: c, Misfire: api.MisfireSkip, Overlap: api.OverlapSkip, Grace: time.Minute, MaxScan: 100}
	now := at(20, 0).Add(30 * time.Second)
	d := schedule.Decide(schedule.State{NextFireAt: at(0, 0)}, p, now)
	require.Empty(t, d.Actions, "the scan stopped before reaching the on-time fire time")
	require.Equal(t, int64(100), d.Skips[0].Count, "what was scanned is counted")
	require.Equal(t, at(20, 1), d.NextFireAt, "and the schedule resumes at the next future fire time")
}
