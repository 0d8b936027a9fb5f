package schedule_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/schedule"
)

// TestFireOnTime: an hourly schedule created at 08:59 fires at 09:00 and
// 10:00, each once, however often the scheduler polls; the run's input
// names the schedule and the fire time.
func TestFireOnTime(t *testing.T) {
	t.Parallel()
	b := setup(t, schedule.Config{})
	b.create(t, request("hourly", "0 * * * *"))
	b.tickAt(t, at(8, 59).Add(59*time.Second))
	require.Empty(t, b.runs(t, "hourly"), "not due yet")
	for _, now := range []time.Time{at(9, 0), at(9, 0).Add(time.Second), at(9, 30), at(10, 0).Add(20 * time.Second)} {
		b.tickAt(t, now)
	}
	runs := b.runs(t, "hourly")
	require.Equal(t, []string{rid("hourly", at(9, 0)), rid("hourly", at(10, 0))}, b.requestIDs(t, "hourly"))
	require.JSONEq(t, `{"scheduledFor": "2026-03-02T09:00:00Z", "schedule": {"id": "hourly"}}`, runs[0].input)
	s := b.get(t, "hourly")
	require.Equal(t, at(11, 0), *s.NextFireAt)
	require.Equal(t, at(10, 0), *s.LastFireAt)
	require.Equal(t, runs[1].runID, s.LastRunID)
	require.Equal(t, api.SkipCounts{}, s.Skipped)
}

// downtime fires the schedule at 09:00, then leaves the scheduler down
// until 14:00:30 (10:00 to 13:00 missed, 14:00 on time) and polls.
func downtime(t *testing.T, b *bundle, req api.ScheduleRequest) api.Schedule {
	t.Helper()
	b.create(t, req)
	b.tickAt(t, at(9, 0))
	b.endRun(t, b.runs(t, req.ScheduleID)[0].runID)
	b.tickAt(t, at(14, 0).Add(30*time.Second))
	return b.get(t, req.ScheduleID)
}

func TestMisfireSkipAcrossDowntime(t *testing.T) {
	t.Parallel()
	b := setup(t, schedule.Config{})
	s := downtime(t, b, request("skip", "0 * * * *"))
	require.Equal(t, []string{rid("skip", at(9, 0)), rid("skip", at(14, 0))}, b.requestIDs(t, "skip"),
		"the missed fire times are dropped; the on-time one runs")
	require.Equal(t, api.SkipCounts{Misfire: 4}, s.Skipped)
	require.Len(t, s.RecentSkips, 1)
	require.Equal(t, api.SkippedFires{Reason: api.SkipMisfire, From: at(10, 0), To: at(13, 0), Count: 4,
		RecordedAt: at(14, 0).Add(30 * time.Second)}, s.RecentSkips[0])
	require.Equal(t, at(15, 0), *s.NextFireAt)

	// Down past a fire time by more than the grace: nothing runs until the
	// next future fire time.
	b.tickAt(t, at(15, 5))
	require.Len(t, b.runs(t, "skip"), 2)
	require.Equal(t, int64(5), b.get(t, "skip").Skipped.Misfire)
	b.tickAt(t, at(16, 0))
	require.Len(t, b.runs(t, "skip"), 3)
}

func TestMisfireCatchupAcrossDowntime(t *testing.T) {
	t.Parallel()
	b := setup(t, schedule.Config{})
	req := request("catchup", "0 * * * *")
	req.MisfirePolicy, req.MaxCatchup = api.MisfireCatchup, 2
	s := downtime(t, b, req)
	require.Equal(t, []string{rid("catchup", at(9, 0)), rid("catchup", at(12, 0)), rid("catchup", at(13, 0)),
		rid("catchup", at(14, 0))}, b.requestIDs(t, "catchup"), "the newest two missed, oldest first, and the on-time one")
	require.Equal(t, api.SkipCounts{CatchupLimit: 2}, s.Skipped, "10:00 and 11:00 were cut off")
	require.Equal(t, api.SkipCatchupLimit, s.RecentSkips[0].Reason)

	// The default limit is 10.
	def := request("catchup-default", "*/5 * * * *")
	def.MisfirePolicy = api.MisfireCatchup
	b.create(t, def)
	b.tickAt(t, at(16, 0).Add(30*time.Second)) // 14:05 … 15:55 missed: 23
	require.Len(t, b.runs(t, "catchup-default"), 11, "ten missed and 16:00")
	require.Equal(t, int64(13), b.get(t, "catchup-default").Skipped.CatchupLimit)
}

func TestMisfireCompressAcrossDowntime(t *testing.T) {
	t.Parallel()
	b := setup(t, schedule.Config{})
	req := request("compress", "0 * * * *")
	req.MisfirePolicy = api.MisfireCompress
	req.Input = []byte(`{"report":"daily"}`)
	s := downtime(t, b, req)
	runs := b.runs(t, "compress")
	require.Len(t, runs, 2, "one run for the whole downtime")
	require.Equal(t, rid("compress", at(14, 0)), runs[1].requestID)
	require.JSONEq(t, `{"report": "daily", "scheduledFor": "2026-03-02T14:00:00Z", "schedule": {"id": "compress",
		"window": {"from": "2026-03-02T10:00:00Z", "to": "2026-03-02T14:00:00Z", "missedCount": 4}}}`, runs[1].input)
	require.Equal(t, api.SkipCounts{}, s.Skipped, "compressed fire times are covered, not skipped")
}

// TestMisfireAfterPause: the fire times a pause passed over are misfires
// on resume.
func TestMisfireAfterPause(t *testing.T) {
	t.Parallel()
	b := setup(t, schedule.Config{})
	req := request("paused", "0 * * * *")
	req.MisfirePolicy = api.MisfireCatchup
	b.create(t, req)
	_, err := b.svc.Pause(t.Context(), op, "paused")
	require.NoError(t, err)
	b.tickAt(t, at(11, 30))
	require.Empty(t, b.runs(t, "paused"), "a paused schedule does not fire")
	_, err = b.svc.Resume(t.Context(), op, "paused")
	require.NoError(t, err)
	b.tickAt(t, at(11, 30))
	require.Equal(t, []string{rid("paused", at(9, 0)), rid("paused", at(10, 0)), rid("paused", at(11, 0))},
		b.requestIDs(t, "paused"), "catchup replays what the pause passed over")
}

// TestOverlapPolicies: the 09:00 run is still active at 10:00.
func TestOverlapPolicies(t *testing.T) {
	t.Parallel()
	start := func(t *testing.T, overlap string) (*bundle, string) {
		b := setup(t, schedule.Config{})
		req := request("o", "0 * * * *")
		req.OverlapPolicy = overlap
		b.create(t, req)
		b.tickAt(t, at(9, 0))
		return b, b.runs(t, "o")[0].runID
	}
	t.Run("skip", func(t *testing.T) {
		t.Parallel()
		b, _ := start(t, api.OverlapSkip)
		b.tickAt(t, at(10, 0))
		require.Len(t, b.runs(t, "o"), 1)
		s := b.get(t, "o")
		require.Equal(t, api.SkipCounts{Overlap: 1}, s.Skipped)
		require.Equal(t, at(10, 0), s.RecentSkips[0].From)
		require.Equal(t, at(11, 0), *s.NextFireAt)
	})
	t.Run("allow", func(t *testing.T) {
		t.Parallel()
		b, _ := start(t, api.OverlapAllow)
		b.tickAt(t, at(10, 0))
		require.Len(t, b.runs(t, "o"), 2)
	})
	t.Run("buffer-one", func(t *testing.T) {
		t.Parallel()
		b, first := start(t, api.OverlapBufferOne)
		b.tickAt(t, at(10, 0))
		require.Len(t, b.runs(t, "o"), 1)
		require.Equal(t, at(10, 0), *b.get(t, "o").BufferedFireAt)
		b.tickAt(t, at(11, 0))
		s := b.get(t, "o")
		require.Equal(t, at(10, 0), *s.BufferedFireAt, "one fire held at most: 11:00 is skipped")
		require.Equal(t, api.SkipCounts{Overlap: 1}, s.Skipped)
		b.endRun(t, first)
		b.tickAt(t, at(11, 20))
		require.Equal(t, []string{rid("o", at(9, 0)), rid("o", at(10, 0))}, b.requestIDs(t, "o"),
			"the held fire starts once the run ends, between fire times")
		require.Nil(t, b.get(t, "o").BufferedFireAt)
	})
	t.Run("cancel-previous", func(t *testing.T) {
		t.Parallel()
		b, first := start(t, api.OverlapCancelPrevious)
		b.tickAt(t, at(10, 0))
		require.Len(t, b.runs(t, "o"), 2)
		var name, id string
		require.NoError(t, b.db.Pool.QueryRow(t.Context(), `SELECT event_data->>'signalName', event_data->>'signalId'
			FROM run_events WHERE run_id = $1 AND event_type = 'SignalAccepted'`, first).Scan(&name, &id))
		require.Equal(t, "CANCEL", name)
		require.Equal(t, "schedule:"+rid("o", at(10, 0)), id)
	})
}

// TestDSTInATimezone fires daily schedules at the transitions' local
// times in New York, polling every 10 minutes across both transition days:
// a skipped local time fires once, at the jump; a repeated one once, at
// its first occurrence.
func TestDSTInATimezone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, cron string
		from       string
		want       []string
	}{
		{"spring-forward", "30 2 * * *", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"fall-back", "30 1 * * *", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, schedule.Config{})
			from := utc(tc.from)
			b.clk.Set(from)
			req := request("dst", tc.cron)
			req.Timezone = "America/New_York"
			b.create(t, req)
			for now := from; now.Before(from.Add(48 * time.Hour)); now = now.Add(10 * time.Minute) {
				b.tickAt(t, now)
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, rid("dst", utc(w)))
			}
			require.Equal(t, want, b.requestIDs(t, "dst"))
			require.Equal(t, api.SkipCounts{}, b.get(t, "dst").Skipped)
		})
	}
}

// TestTwoSchedulersRace: two gateways poll the same schedules at once,
// many times over; each schedule is fired by one of them (the claim), and
// every fire time starts exactly one run.
func TestTwoSchedulersRace(t *testing.T) {
	t.Parallel()
	b := setup(t, schedule.Config{Batch: 3})
	second, _ := b.scheduler(t, schedule.Config{Batch: 3})
	ids := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"}
	for _, id := range ids {
		b.create(t, request(id, "*/10 * * * *"))
	}
	for _, now := range []time.Time{at(9, 0), at(9, 10), at(9, 20)} {
		b.clk.Set(now)
		var wg sync.WaitGroup
		var fired atomic.Int64
		for _, svc := range []*schedule.Service{b.svc, second, b.svc, second} {
			wg.Go(func() {
				n, err := svc.Tick(t.Context())
				require.NoError(t, err)
				fired.Add(int64(n))
			})
		}
		wg.Wait()
		require.Equal(t, int64(len(ids)), fired.Load(), "each schedule fired by one scheduler, once, at %v", now)
	}
	for _, id := range ids {
		require.Equal(t, []string{rid(id, at(9, 0)), rid(id, at(9, 10)), rid(id, at(9, 20))}, b.requestIDs(t, id), id)
	}
}

// TestCrashBetweenClaimAndStart: a scheduler claims a due schedule and
// dies before starting its run. The claim keeps the other scheduler off
// until its lease runs out; then the other fires it, once. The first, back
// with its stale claim, fires nothing.
func TestCrashBetweenClaimAndStart(t *testing.T) {
	t.Parallel()
	b := setup(t, schedule.Config{Lease: 20 * time.Second})
	second, _ := b.scheduler(t, schedule.Config{Lease: 20 * time.Second})
	b.create(t, request("crash", "0 * * * *"))
	b.clk.Set(at(9, 0))
	keys, token, err := b.svc.Claim(t.Context())
	require.NoError(t, err)
	require.Equal(t, []schedule.Key{{TenantID: "acme", ScheduleID: "crash"}}, keys)

	b.clk.Set(at(9, 0).Add(10 * time.Second))
	n, err := second.Tick(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "the claim holds")
	require.Empty(t, b.runs(t, "crash"))

	b.clk.Set(at(9, 0).Add(21 * time.Second))
	n, err = second.Tick(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n, "the lease ran out")
	fired, err := b.svc.FireClaimed(t.Context(), keys[0], token)
	require.NoError(t, err)
	require.False(t, fired, "the first scheduler returns: its claim is gone")
	require.Equal(t, []string{rid("crash", at(9, 0))}, b.requestIDs(t, "crash"))
	require.Equal(t, api.SkipCounts{}, b.get(t, "crash").Skipped, "21s late is within the grace")
}

// TestReplayedFireStartsNothing: a fire replayed after its run started
// (the schedule's state restored from a backup, say) finds its run by the
// run request id and starts nothing; the metric counts it a duplicate.
func TestReplayedFireStartsNothing(t *testing.T) {
	t.Parallel()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	b := setup(t, schedule.Config{MeterProvider: mp})
	b.create(t, request("replay", "0 * * * *"))
	b.tickAt(t, at(9, 0))
	_, err = b.db.Pool.Exec(t.Context(), `UPDATE schedules SET next_fire_at = $1`, at(9, 0))
	require.NoError(t, err)
	b.tickAt(t, at(9, 0).Add(5*time.Second))
	runs := b.runs(t, "replay")
	require.Len(t, runs, 1)
	require.Equal(t, runs[0].runID, b.get(t, "replay").LastRunID)

	sc := metricstest.Get(t, h)
	require.Equal(t, int64(1), sc.Count(t, "weft_gateway_schedule_fires_total", map[string]string{"outcome": "started"}))
	require.Equal(t, int64(1), sc.Count(t, "weft_gateway_schedule_fires_total", map[string]string{"outcome": "duplicate"}))
}

// TestSkippedMetric counts skipped fire times by reason.
func TestSkippedMetric(t *testing.T) {
	t.Parallel()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	b := setup(t, schedule.Config{MeterProvider: mp})
	downtime(t, b, request("skip", "0 * * * *"))
	req := request("limit", "0 * * * *")
	req.MisfirePolicy, req.MaxCatchup, req.OverlapPolicy = api.MisfireCatchup, 1, api.OverlapSkip
	b.create(t, req)
	b.tickAt(t, at(17, 30)) // 15:00 to 17:00 missed; 14:00 came before the schedule
	sc := metricstest.Get(t, h)
	skipped := func(reason string) int64 {
		return sc.Count(t, "weft_gateway_schedule_skipped_total", map[string]string{"reason": reason})
	}
	require.Equal(t, int64(4+3), skipped(api.SkipMisfire), "four in the downtime, then 15:00 to 17:00 of schedule skip")
	require.Equal(t, int64(2), skipped(api.SkipCatchupLimit), "15:00 and 16:00 of schedule limit")
}

// TestOverloadedFireBacksOff: a fire the gateway refuses as Overloaded
// (REJECT policy, the environment full) commits nothing and is retried
// after the Retry-After; once the environment has room, it starts.
func TestOverloadedFireBacksOff(t *testing.T) {
	t.Parallel()
	b := setupIntake(t, schedule.Config{}, intake.Config{Admission: admission.Limits{
		Default: admission.Limit{MaxConcurrentRuns: 1, Policy: admission.Reject, RetryAfter: 20 * time.Second}}})
	b.create(t, request("busy", "0 * * * *"))
	b.tickAt(t, at(9, 0))
	first := b.runs(t, "busy")[0].runID

	b.tickAt(t, at(10, 0))
	require.Len(t, b.runs(t, "busy"), 1, "the environment is full")
	s := b.get(t, "busy")
	require.Equal(t, at(10, 0), *s.NextFireAt, "the fire is not consumed")
	require.Equal(t, api.SkipCounts{}, s.Skipped)

	b.endRun(t, first)
	b.tickAt(t, at(10, 0).Add(10*time.Second))
	require.Len(t, b.runs(t, "busy"), 1, "backing off until the Retry-After")
	b.tickAt(t, at(10, 0).Add(21*time.Second))
	require.Equal(t, []string{rid("busy", at(9, 0)), rid("busy", at(10, 0))}, b.requestIDs(t, "busy"))
}

// TestRunPollsAtOnce: Run polls as it starts, then every PollInterval,
// and returns when its context ends.
func TestRunPollsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, schedule.Config{PollInterval: time.Hour, MisfireGrace: time.Hour})
	b.create(t, request("hourly", "0 * * * *"))
	b.clk.Set(at(9, 0))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); b.svc.Run(ctx) }()
	require.Eventually(t, func() bool { return len(b.runs(t, "hourly")) == 1 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	<-done
}
