package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/weftest"
)

// A fire time reads in the schedule's zone with UTC beside it, the UTC
// date too when the zone's is another day; UTC alone for a UTC schedule
// or a zone this binary does not know.
func TestFireTimeInZoneAndUTC(t *testing.T) {
	t.Parallel()
	at := func(s string) *time.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return &v
	}
	for _, c := range []struct {
		at, tz, want string
	}{
		{"2026-12-03T01:00:00Z", "Europe/Paris", "2026-12-03 02:00 CET (01:00 UTC)"},
		{"2026-07-03T07:00:00Z", "Europe/Paris", "2026-07-03 09:00 CEST (07:00 UTC)"},
		{"2026-12-02T23:30:00Z", "Europe/Paris", "2026-12-03 00:30 CET (2026-12-02 23:30 UTC)"},
		{"2026-12-03T01:00:00Z", "America/New_York", "2026-12-02 20:00 EST (2026-12-03 01:00 UTC)"},
		{"2026-12-03T01:00:00Z", "UTC", "2026-12-03 01:00 UTC"},
		{"2026-12-03T01:00:00Z", "", "2026-12-03 01:00 UTC"},
		{"2026-12-03T01:00:00Z", "Nowhere/City", "2026-12-03 01:00 UTC"},
	} {
		require.Equal(t, c.want, fireTime(at(c.at), c.tz), "%s in %q", c.at, c.tz)
	}
	require.Equal(t, "-", fireTime(nil, "Europe/Paris"))
}

// `schedule ls` has a LAST FIRE column, as the docs call it: the last
// fire time in the schedule's zone and UTC, and the run it started.
func TestScheduleListLastFire(t *testing.T) {
	t.Parallel()
	next := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	last := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	var out weftest.Buffer
	require.NoError(t, printScheduleList(&out, &api.ScheduleList{Schedules: []api.Schedule{
		{ScheduleID: "mornings", Cron: "0 9 * * *", Timezone: "Europe/Paris", PlanID: "hello", PlanVersion: "1",
			NextFireAt: &next, LastFireAt: &last, LastRunID: "run-1"},
		{ScheduleID: "fresh", Cron: "0 9 * * *", Timezone: "UTC", PlanID: "hello", PlanVersion: "1", NextFireAt: &next},
	}}, 50))
	lines := strings.Split(out.String(), "\n")
	require.Contains(t, lines[0], "NEXT FIRE")
	require.Contains(t, lines[0], "LAST FIRE")
	require.NotContains(t, lines[0], "LAST RUN")
	require.Contains(t, lines[1], "2026-12-03 09:00 CET (08:00 UTC)")
	require.Contains(t, lines[1], "2026-12-02 09:00 CET (08:00 UTC), run run-1")
	require.Contains(t, lines[2], "2026-12-03 08:00 UTC")
	require.Regexp(t, `2026-12-03 08:00 UTC\s+-\s+0$`, lines[2], "never fired: no last fire")
}
