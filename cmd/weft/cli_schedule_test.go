package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/cli"
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
	t.Run("trigger input reaches a step", func(t *testing.T) { testTriggerInput(t, s) })
	t.Run("schedule fire reaches a step", func(t *testing.T) { testScheduleInput(t, s) })
}

func testScheduleCommands(t *testing.T, s *cliStack) {
	r := s.weft(t, "schedule", "create", "-f", example("hello.yaml"), "--cron", "0 9 * * MON-FRI",
		"--timezone", "Europe/Paris", "--id", "mornings", "--misfire", "catchup", "--max-catchup", "3", "--overlap", "buffer-one")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, `Schedule mornings: "0 9 * * MON-FRI" in Europe/Paris starts plan hello 1; next fire `)
	require.Regexp(t, `next fire \d{4}-\d\d-\d\d 09:00 CES?T \(0[78]:00 UTC\)\.\n$`, r.out, "the next fire in the schedule's zone and in UTC")
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
		require.Equal(t, cli.ExitError, r.code)
		require.Contains(t, r.err.Error(), "InvalidArgument", "%v", bad)
	}
	r = s.weft(t, "schedule", "create", "--cron", "0 9 * * *")
	require.ErrorContains(t, r.err, "pass -f PLAN_FILE")

	r = s.weft(t, "schedule", "ls")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "mornings")
	require.Contains(t, r.out, "active")
	require.Contains(t, r.out, "LAST FIRE", "the column is named as the docs name it")
	require.NotContains(t, r.out, "LAST RUN")
	require.Regexp(t, `09:00 CES?T \(0[78]:00 UTC\)`, r.out)
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
	require.Regexp(t, `Next fire\s+\d{4}-\d\d-\d\d 09:00 CES?T \(0[78]:00 UTC\)\n`, r.out)
	require.Regexp(t, `Last fire\s+-\n`, r.out, "it never fired")

	// A changed definition is an update, not a second create.
	r = s.weft(t, "schedule", "create", "-f", example("hello.yaml"), "--cron", "30 7 * * *", "--id", "mornings")
	require.ErrorContains(t, r.err, "AlreadyExists")
	r = s.weft(t, "schedule", "update", "mornings", "-f", example("hello.yaml"), "--cron", "30 7 * * *", "--timezone", "Europe/Paris")
	require.NoError(t, r.err, r.errOut)
	require.Regexp(t, `Schedule mornings: "30 7 \* \* \*" in Europe/Paris starts plan hello 1; next fire \d{4}-\d\d-\d\d 07:30 CES?T`, r.out)
	got = decode[api.Schedule](t, s.weft(t, "schedule", "get", "mornings", "-o", "json"))
	require.Equal(t, "30 7 * * *", got.Cron)
	require.Equal(t, api.OverlapSkip, got.OverlapPolicy, "the definition is replaced whole")
	r = s.weft(t, "schedule", "update", "mornings", "--cron", "0 9 * * *")
	require.ErrorContains(t, r.err, "pass -f PLAN_FILE")
	r = s.weft(t, "schedule", "update", "no-such", "-f", example("hello.yaml"), "--cron", "0 9 * * *")
	require.ErrorContains(t, r.err, "NotFound")

	r = s.weft(t, "schedule", "rm", "mornings")
	require.NoError(t, r.err, r.errOut)
	r = s.weft(t, "schedule", "get", "mornings")
	require.ErrorContains(t, r.err, "NotFound")
}

func testTriggerCommands(t *testing.T, s *cliStack) {
	r := s.weft(t, "trigger", "create", "-f", example("hello.yaml"), "--id", "orders")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "Trigger orders starts plan hello 1 per event, with input the event's payload.")

	first := decode[api.TriggerEventResult](t, s.weft(t, "trigger", "send", "orders", "--event-id", "evt-1",
		"--payload", `{"order": 1}`, "-o", "json"))
	require.False(t, first.Duplicate)
	require.Equal(t, "orders:evt-1", first.RunRequestID)
	r = s.weft(t, "trigger", "send", "orders", "--event-id", "evt-1", "--payload", `{"order": 1}`)
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "Event evt-1 already started run "+first.RunID)
	r = s.weft(t, "trigger", "send", "orders", "--event-id", "evt-1", "--payload", `{"order": 2}`)
	require.ErrorContains(t, r.err, "IdempotencyConflict", "the same event id with another payload")
	require.ErrorContains(t, r.err, `event "evt-1" was sent to trigger "orders" before with another payload`)
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

// writePlan writes a plan file of the test and returns its path.
func writePlan(t *testing.T, doc string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.yaml")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	return path
}

// stepOutputs waits for run runID to complete and returns each completed
// step's output.
func (s *cliStack) stepOutputs(t *testing.T, runID string) map[string]string {
	t.Helper()
	s.waitFor(t, runID, "the run completes", func(v *api.RunView) bool { return v.Status == events.RunStatusCompleted })
	page := decode[api.EventPage](t, s.weft(t, "run", "events", runID, "-o", "json"))
	outputs := map[string]string{}
	for _, e := range page.Events {
		if e.EventType == events.StepCompleted {
			var d events.StepCompletedData
			require.NoError(t, e.Data(&d))
			outputs[e.StepID] = string(d.Output)
		}
	}
	return outputs
}

// orderPlan echoes what its run's input says of an order.
const orderPlan = `planId: on-order
planVersion: "1"
steps:
  - id: ship
    activity: echo
    input:
      order: "${{ input.order.id }}"
      line: "ship order ${{ input.order.id }}"
`

// An event's payload is its run's input, which the step reads through
// ${{ input.x }}; a trigger's input expression makes another input of
// the event; a bad expression is refused at create with its column.
func testTriggerInput(t *testing.T, s *cliStack) {
	t.Parallel()
	file := writePlan(t, orderPlan)
	r := s.weft(t, "trigger", "create", "-f", file, "--id", "payloads")
	require.NoError(t, r.err, r.errOut)
	ev := decode[api.TriggerEventResult](t, s.weft(t, "trigger", "send", "payloads", "--event-id", "e-1",
		"--payload", `{"order": {"id": 7}}`, "-o", "json"))
	require.JSONEq(t, `{"order": 7, "line": "ship order 7"}`, s.stepOutputs(t, ev.RunID)["ship"])

	r = s.weft(t, "trigger", "create", "-f", file, "--id", "shaped", "--input", `{"order": {"id": event.payload.n * 10}}`)
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, `with input {"order": {"id": event.payload.n * 10}}`)
	ev = decode[api.TriggerEventResult](t, s.weft(t, "trigger", "send", "shaped", "--payload", `{"n": 4}`, "-o", "json"))
	require.JSONEq(t, `{"order": 40, "line": "ship order 40"}`, s.stepOutputs(t, ev.RunID)["ship"])
	r = s.weft(t, "trigger", "send", "shaped", "--payload", `{"m": 4}`)
	require.ErrorContains(t, r.err, "no such key: n")

	r = s.weft(t, "trigger", "create", "-f", file, "--id", "bad", "--input", "event.payload.")
	require.ErrorContains(t, r.err, "InvalidArgument")
	require.ErrorContains(t, r.err, "column 15")
}

// A fire's scheduledFor and schedule id reach its run's step, beside the
// schedule's own input. The schedule fires every minute, so this waits
// for the next minute to begin.
func testScheduleInput(t *testing.T, s *cliStack) {
	t.Parallel()
	file := writePlan(t, `planId: stamped
planVersion: "1"
steps:
  - id: stamp
    activity: echo
    input:
      at: "${{ input.scheduledFor }}"
      by: "${{ input.schedule.id }}"
      report: "${{ input.report }}"
`)
	r := s.weft(t, "schedule", "create", "-f", file, "--cron", "* * * * *", "--id", "minutely",
		"--input", `{"report": "daily"}`, "--overlap", "allow")
	require.NoError(t, r.err, r.errOut)
	t.Cleanup(func() { s.weft(t, "schedule", "rm", "minutely") })
	r = s.weft(t, "schedule", "create", "-f", file, "--cron", "* * * * *", "--input", `["daily"]`)
	require.ErrorContains(t, r.err, "input must be a JSON object")

	var sch *api.Schedule
	require.Eventually(t, func() bool {
		var err error
		sch, err = s.client.GetSchedule(t.Context(), "minutely")
		return err == nil && sch.LastRunID != ""
	}, cliStep, 100*time.Millisecond, "the schedule fires")
	var out struct{ At, By, Report string }
	require.NoError(t, json.Unmarshal([]byte(s.stepOutputs(t, sch.LastRunID)["stamp"]), &out))
	require.Equal(t, sch.LastFireAt.UTC().Format(time.RFC3339), out.At)
	require.Equal(t, "minutely", out.By)
	require.Equal(t, "daily", out.Report)
}
