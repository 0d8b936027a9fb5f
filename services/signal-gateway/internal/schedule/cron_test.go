package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/services/signal-gateway/internal/schedule"
)

// fires lists the fire times of expr in tz from (exclusive) to to
// (inclusive), in UTC.
func fires(t *testing.T, expr, tz string, from, to time.Time) []time.Time {
	t.Helper()
	c, err := schedule.ParseCron(expr, tz)
	require.NoError(t, err)
	var out []time.Time
	for at := c.Next(from); !at.IsZero() && !at.After(to); at = c.Next(at) {
		require.Equal(t, time.UTC, at.Location())
		out = append(out, at)
		require.Less(t, len(out), 10000, "runaway")
	}
	return out
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// TestCronDST pins the documented DST rules in two zones with
// transitions at different local times: a skipped local time fires once at
// the jump, a repeated one once at its first occurrence, and hourly
// expressions fire 23 and 24 times on the transition days.
func TestCronDST(t *testing.T) {
	t.Parallel()
	ny := []struct {
		name, expr   string
		from, to     string
		want         []string
		wantCountDay int
	}{
		{name: "spring daily in the gap fires at the jump", expr: "30 2 * * *",
			from: "2026-03-07T12:00:00Z", to: "2026-03-09T12:00:00Z",
			want: []string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{name: "spring daily before the gap is untouched", expr: "30 1 * * *",
			from: "2026-03-07T12:00:00Z", to: "2026-03-09T12:00:00Z",
			want: []string{"2026-03-08T06:30:00Z", "2026-03-09T05:30:00Z"}},
		{name: "fall daily in the repeated hour fires at the first occurrence", expr: "30 1 * * *",
			from: "2026-10-31T12:00:00Z", to: "2026-11-02T12:00:00Z",
			want: []string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{name: "spring half-hourly: 02:00 and 02:30 share the jump", expr: "*/30 1-3 8 3 *",
			from: "2026-03-08T00:00:00Z", to: "2026-03-09T00:00:00Z",
			want: []string{"2026-03-08T06:00:00Z", "2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z"}},
		{name: "fall half-hourly: the repeated hour fires once", expr: "*/30 0-2 1 11 *",
			from: "2026-11-01T00:00:00Z", to: "2026-11-02T00:00:00Z",
			want: []string{"2026-11-01T04:00:00Z", "2026-11-01T04:30:00Z", "2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z",
				"2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z"}},
	}
	for _, tc := range ny {
		var want []time.Time
		for _, w := range tc.want {
			want = append(want, utc(w))
		}
		require.Equal(t, want, fires(t, tc.expr, "America/New_York", utc(tc.from), utc(tc.to)), tc.name)
	}

	// Hourly over a whole local day.
	ny0 := func(d int, m time.Month) time.Time {
		loc, err := time.LoadLocation("America/New_York")
		require.NoError(t, err)
		return time.Date(2026, m, d, 0, 0, 0, 0, loc)
	}
	day := func(start time.Time) []time.Time {
		return fires(t, "0 * * * *", "America/New_York", start.Add(-time.Second), start.AddDate(0, 0, 1).Add(-time.Second))
	}
	require.Len(t, day(ny0(8, time.March)), 23, "spring-forward day")
	require.Len(t, day(ny0(1, time.November)), 24, "fall-back day: the repeated 01:00 fires once")
	require.Len(t, day(ny0(9, time.March)), 24, "an ordinary day")

	// Europe/Paris jumps at 02:00 local (01:00 UTC) and falls at 03:00.
	require.Equal(t, []time.Time{utc("2026-03-29T01:00:00Z")},
		fires(t, "15 2 29 3 *", "Europe/Paris", utc("2026-03-28T00:00:00Z"), utc("2026-03-30T00:00:00Z")),
		"02:15 does not exist on 29 March in Paris: it fires at the jump, 03:00 CEST")
	require.Equal(t, []time.Time{utc("2026-10-25T00:15:00Z")},
		fires(t, "15 2 25 10 *", "Europe/Paris", utc("2026-10-24T00:00:00Z"), utc("2026-10-26T00:00:00Z")),
		"02:15 happens twice on 25 October in Paris: it fires at 02:15 CEST only")
}

// TestCronNextFromInsideRepeatedHour: a time inside the second pass of a
// repeated hour does not fire again the minutes that fired in the first.
func TestCronNextFromInsideRepeatedHour(t *testing.T) {
	t.Parallel()
	c, err := schedule.ParseCron("*/10 * * * *", "America/New_York")
	require.NoError(t, err)
	// 06:10Z is 01:10 EST, the second 01:10 of 1 November 2026.
	require.Equal(t, utc("2026-11-01T07:00:00Z"), c.Next(utc("2026-11-01T06:10:00Z")), "02:00 EST")
	require.Equal(t, utc("2026-11-01T05:20:00Z"), c.Next(utc("2026-11-01T05:10:00Z")), "first pass: 01:20 EDT")
}

func TestParseCronRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ expr, tz, want string }{
		{"* * * *", "UTC", "five fields"},
		{"0 * * * * *", "UTC", "five fields"},
		{"@daily", "UTC", "five fields"},
		{"61 * * * *", "UTC", "invalid cron"},
		{"CRON_TZ=UTC 0 * * * *", "UTC", "five fields"},
		{"TZ=UTC 0 * * *", "UTC", "timezone in its own field"},
		{"0 9 * * *", "Mars/Olympus", "not an IANA zone"},
		{"0 9 * * *", "Local", "depends on the host"},
		{"0 9 * * *", "", "empty"},
	} {
		_, err := schedule.ParseCron(tc.expr, tc.tz)
		require.ErrorContains(t, err, tc.want, "%q in %q", tc.expr, tc.tz)
	}
	c, err := schedule.ParseCron("0 0 30 2 *", "UTC")
	require.NoError(t, err, "parses")
	require.True(t, c.Next(utc("2026-01-01T00:00:00Z")).IsZero(), "but 30 February never comes")
}
