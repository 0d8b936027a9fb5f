package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// TestCLISchedulesAndTriggers drives `weft schedule` and `weft trigger`
// against a `weft dev` stack: a schedule through its life, and an event
// sent twice that starts one run, which completes.
func TestCLISchedulesAndTriggers(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t)
	t.Run("schedule", func(t *testing.T) { testScheduleCommands(t, s) })
	t.Run("trigger", func(t *testing.T) { testTriggerCommands(t, s) })
}

func testScheduleCommands(t *testing.T, s *cliStack) {
	r := s.weft(t, "schedule", "create", "-f", example("hello.yaml"), "--cron", "0 9 * * MON-FRI",
		"--timezone", "Europe/Paris", "--id", "mornings", "--misfire", "catchup", "--max-catchup", "3", "--overlap", "buffer-one")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, `Schedule mornings: "0 9 * * MON-FRI" in Europe/Paris starts plan hello 1; next fire `)
	r = s.weft(t, "schedule", "create", "-f", example("hello.yaml"), "--cron", "0 9 * * MON-FRI",
		"--timezone", "Europe/Paris", "--id", "mornings", "--misfire", "catchup", "--max-catchup", "3", "--overlap", "buffer-one")
	require.NoError(t, r.err, "the same create again: %s", r.errOut)

	for _, bad := range [][]string{
		{"--cron", "0 25 * * *"},
		{"--cron", "0 9 * * *", "--timezone", "Nowhere/City"},
		{"--cron", "0 9 * * *", "--overlap", "queue"},
	} {
		args := append([]string{"schedule", "create", "-f", example("hello.yaml")}, bad...)
		r = s.weft(t, args...)
		require.Error(t, r.err, "%v", bad)
		require.Equal(t, exitError, r.code)
		require.Contains(t, r.err.Error(), "InvalidArgument", "%v", bad)
	}
	r = s.weft(t, "schedule", "create", "--cron", "0 9 * * *")
	require.ErrorContains(t, r.err, "pass -f PLAN_FILE")

	r = s.weft(t, "schedule", "ls")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "mornings")
	require.Contains(t, r.out, "active")
	list := decode[api.ScheduleList](t, s.weft(t, "schedule", "ls", "-o", "json"))
	require.Len(t, list.Schedules, 1)

	r = s.weft(t, "schedule", "pause", "mornings")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "Schedule mornings is paused")
	got := decode[api.Schedule](t, s.weft(t, "schedule", "get", "mornings", "-o", "json"))
	require.True(t, got.Paused)
	require.Equal(t, api.OverlapBufferOne, got.OverlapPolicy)
	require.Equal(t, 3, got.MaxCatchup)
	r = s.weft(t, "schedule", "resume", "mornings")
	require.NoError(t, r.err, r.errOut)
	r = s.weft(t, "schedule", "get", "mornings")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "misfire catchup (max catch-up 3), overlap buffer-one")

	r = s.weft(t, "schedule", "rm", "mornings")
	require.NoError(t, r.err, r.errOut)
	r = s.weft(t, "schedule", "get", "mornings")
	require.ErrorContains(t, r.err, "NotFound")
}

func testTriggerCommands(t *testing.T, s *cliStack) {
	r := s.weft(t, "trigger", "create", "-f", example("hello.yaml"), "--id", "orders")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "Trigger orders starts plan hello 1")

	first := decode[api.TriggerEventResult](t, s.weft(t, "trigger", "send", "orders", "--event-id", "evt-1",
		"--payload", `{"order": 1}`, "-o", "json"))
	require.False(t, first.Duplicate)
	require.Equal(t, "orders:evt-1", first.RunRequestID)
	r = s.weft(t, "trigger", "send", "orders", "--event-id", "evt-1")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "Event evt-1 already started run "+first.RunID)
	s.waitFor(t, first.RunID, "the event's run completes", func(v *api.RunView) bool {
		return v.Status == events.RunStatusCompleted
	})

	r = s.weft(t, "trigger", "send", "orders")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "started run")
	r = s.weft(t, "trigger", "send", "orders", "--payload", "{nope")
	require.ErrorContains(t, r.err, "--payload is not JSON")
	r = s.weft(t, "trigger", "ls")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "orders")
	r = s.weft(t, "trigger", "rm", "orders")
	require.NoError(t, r.err, r.errOut)
	r = s.weft(t, "trigger", "send", "orders", "--event-id", "evt-2")
	require.ErrorContains(t, r.err, "NotFound")
}
