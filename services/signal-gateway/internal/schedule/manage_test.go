package schedule_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
	"github.com/weftrun/weft/services/signal-gateway/internal/schedule"
)

func (b *bundle) count(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM schedules`).Scan(&n))
	return n
}

// TestCreateRefusesBadInput: every rule, each at its edge, refused with
// the field it breaks before anything is stored.
func TestCreateRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, schedule.Config{MaxInputBytes: 100, MaxCatchupLimit: 20})
	edit := func(f func(*api.ScheduleRequest)) api.ScheduleRequest {
		r := request("ok", "0 9 * * *")
		f(&r)
		return r
	}
	// input(n) is an object of n bytes.
	input := func(n int) json.RawMessage { return json.RawMessage(`{"x":"` + strings.Repeat("x", n-8) + `"}`) }
	for _, tc := range []struct {
		name  string
		req   api.ScheduleRequest
		code  string
		field string
	}{
		{"no cron", edit(func(r *api.ScheduleRequest) { r.Cron = "" }), api.CodeInvalidArgument, "cron"},
		{"bad cron", edit(func(r *api.ScheduleRequest) { r.Cron = "0 25 * * *" }), api.CodeInvalidArgument, "cron"},
		{"six fields", edit(func(r *api.ScheduleRequest) { r.Cron = "0 0 9 * * *" }), api.CodeInvalidArgument, "cron"},
		{"never fires", edit(func(r *api.ScheduleRequest) { r.Cron = "0 0 31 2 *" }), api.CodeInvalidArgument, "cron"},
		{"cron over the limit", edit(func(r *api.ScheduleRequest) {
			r.Cron = "0 9 * * " + strings.Repeat("1,", 60) + "1" // 129 bytes
		}), api.CodeInvalidArgument, "cron"},
		{"unknown timezone", edit(func(r *api.ScheduleRequest) { r.Timezone = "Europe/Atlantis" }), api.CodeInvalidArgument, "timezone"},
		{"Local", edit(func(r *api.ScheduleRequest) { r.Timezone = "Local" }), api.CodeInvalidArgument, "timezone"},
		{"timezone over the limit", edit(func(r *api.ScheduleRequest) { r.Timezone = strings.Repeat("A", 65) }), api.CodeInvalidArgument, "timezone"},
		{"unknown misfire policy", edit(func(r *api.ScheduleRequest) { r.MisfirePolicy = "later" }), api.CodeInvalidArgument, "misfirePolicy"},
		{"unknown overlap policy", edit(func(r *api.ScheduleRequest) { r.OverlapPolicy = "queue" }), api.CodeInvalidArgument, "overlapPolicy"},
		{"maxCatchup over the limit", edit(func(r *api.ScheduleRequest) { r.MaxCatchup = 21 }), api.CodeInvalidArgument, "maxCatchup"},
		{"negative maxCatchup", edit(func(r *api.ScheduleRequest) { r.MaxCatchup = -1 }), api.CodeInvalidArgument, "maxCatchup"},
		{"no plan", edit(func(r *api.ScheduleRequest) { r.Plan = nil }), api.CodeInvalidArgument, "plan"},
		{"null plan", edit(func(r *api.ScheduleRequest) { r.Plan = json.RawMessage("null") }), api.CodeInvalidArgument, "plan"},
		{"invalid plan", edit(func(r *api.ScheduleRequest) {
			r.Plan = json.RawMessage(`{"planId":"p","planVersion":"1","steps":[]}`)
		}), api.CodeInvalidArgument, "plan"},
		{"input over the limit", edit(func(r *api.ScheduleRequest) { r.Input = input(101) }), api.CodePayloadTooLarge, "input"},
		{"input a string", edit(func(r *api.ScheduleRequest) { r.Input = json.RawMessage(`"daily"`) }), api.CodeInvalidArgument, "input"},
		{"input a list", edit(func(r *api.ScheduleRequest) { r.Input = json.RawMessage(` [{"a": 1}]`) }), api.CodeInvalidArgument, "input"},
		{"input with scheduledFor", edit(func(r *api.ScheduleRequest) {
			r.Input = json.RawMessage(`{"scheduledFor": "now"}`)
		}), api.CodeInvalidArgument, "input"},
		{"input with schedule", edit(func(r *api.ScheduleRequest) { r.Input = json.RawMessage(`{"schedule": {}}`) }), api.CodeInvalidArgument, "input"},
		{"id with ':'", edit(func(r *api.ScheduleRequest) { r.ScheduleID = "a:b" }), api.CodeInvalidArgument, "scheduleId"},
		{"id with '.'", edit(func(r *api.ScheduleRequest) { r.ScheduleID = "a.b" }), api.CodeInvalidArgument, "scheduleId"},
		{"id over the limit", edit(func(r *api.ScheduleRequest) { r.ScheduleID = strings.Repeat("i", 65) }), api.CodeInvalidArgument, "scheduleId"},
		{"no environment", edit(func(r *api.ScheduleRequest) { r.EnvironmentID = "" }), api.CodeInvalidArgument, "environmentId"},
		{"another tenant", edit(func(r *api.ScheduleRequest) { r.TenantID = "globex" }), api.CodePermissionDenied, ""},
	} {
		_, _, err := b.svc.Create(t.Context(), op, tc.req)
		intaketest.RequireRefused(t, err, tc.code, tc.field)
	}
	_, _, err := b.svc.Create(t.Context(), viewer, request("ok", "0 9 * * *"))
	intaketest.RequireRefused(t, err, api.CodePermissionDenied, "")
	require.Zero(t, b.count(t), "nothing refused was stored")

	// At the edges, accepted.
	ok := edit(func(r *api.ScheduleRequest) {
		r.ScheduleID = strings.Repeat("i", 64)
		r.Cron = "00 9 * * " + strings.Repeat("1,", 59) + "1" // 128 bytes
		r.Timezone = "America/Argentina/ComodRivadavia"
		r.MaxCatchup = 20
		r.Input = input(100)
	})
	require.Len(t, ok.Cron, api.MaxCronBytes)
	b.create(t, ok)
}

// TestCreateIsIdempotent: a create repeated with the same definition
// answers the schedule; with another it is refused AlreadyExists. A
// missing id is generated.
func TestCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t, schedule.Config{})
	req := request("daily", "0 9 * * *")
	req.Input = json.RawMessage(`{"a":1,"b":2}`)
	first := b.create(t, req)
	require.Equal(t, api.DefaultTimezone, first.Timezone)
	require.Equal(t, api.MisfireSkip, first.MisfirePolicy)
	require.Equal(t, api.DefaultMaxCatchup, first.MaxCatchup)
	require.Equal(t, "nightly", first.PlanID)
	require.Equal(t, at(9, 0), *first.NextFireAt)

	req.Input = json.RawMessage(`{"b":2, "a":1}`) // the same JSON value
	again, created, err := b.svc.Create(t.Context(), op, req)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, first, again)

	req.Cron = "0 10 * * *"
	_, _, err = b.svc.Create(t.Context(), op, req)
	intaketest.RequireRefused(t, err, api.CodeAlreadyExists, "")

	gen := request("", "0 9 * * *")
	s := b.create(t, gen)
	require.Len(t, s.ScheduleID, 36, "a UUIDv7")

	// Ids are per tenant: globex may have a "daily" of its own.
	req = request("daily", "0 9 * * *")
	req.TenantID = "globex"
	_, created, err = b.svc.Create(t.Context(), other, req)
	require.NoError(t, err)
	require.True(t, created)
}

func TestUpdatePauseResumeDelete(t *testing.T) {
	t.Parallel()
	b := setup(t, schedule.Config{})
	b.create(t, request("s", "0 9 * * *"))

	req := request("", "30 9 * * *")
	req.OverlapPolicy = api.OverlapBufferOne
	s, err := b.svc.Update(t.Context(), op, "s", req)
	require.NoError(t, err)
	require.Equal(t, at(9, 30), *s.NextFireAt, "a new expression moves the next fire time")
	require.Equal(t, api.OverlapBufferOne, s.OverlapPolicy)
	require.False(t, s.Paused)

	req.ScheduleID = "other"
	_, err = b.svc.Update(t.Context(), op, "s", req)
	intaketest.RequireRefused(t, err, api.CodeInvalidArgument, "scheduleId")
	_, err = b.svc.Update(t.Context(), op, "missing", request("", "0 9 * * *"))
	intaketest.RequireRefused(t, err, api.CodeNotFound, "")
	_, err = b.svc.Update(t.Context(), op, "s", request("", "bad"))
	intaketest.RequireRefused(t, err, api.CodeInvalidArgument, "cron")

	s, err = b.svc.Pause(t.Context(), op, "s")
	require.NoError(t, err)
	require.True(t, s.Paused)
	again, err := b.svc.Pause(t.Context(), op, "s")
	require.NoError(t, err)
	require.Equal(t, s, again, "pausing twice changes nothing")
	s, err = b.svc.Resume(t.Context(), op, "s")
	require.NoError(t, err)
	require.False(t, s.Paused)
	_, err = b.svc.Pause(t.Context(), viewer, "s")
	intaketest.RequireRefused(t, err, api.CodePermissionDenied, "")

	_, err = b.svc.Get(t.Context(), other, "s")
	intaketest.RequireRefused(t, err, api.CodeNotFound, "")
	intaketest.RequireRefused(t, b.svc.Delete(t.Context(), other, "s"), api.CodeNotFound, "")
	require.NoError(t, b.svc.Delete(t.Context(), op, "s"))
	intaketest.RequireRefused(t, b.svc.Delete(t.Context(), op, "s"), api.CodeNotFound, "")
	_, err = b.svc.Get(t.Context(), op, "s")
	intaketest.RequireRefused(t, err, api.CodeNotFound, "")
}

func TestList(t *testing.T) {
	t.Parallel()
	b := setup(t, schedule.Config{})
	for _, id := range []string{"c", "a", "b", "B"} {
		b.create(t, request(id, "0 9 * * *"))
	}
	page, err := b.svc.List(t.Context(), viewer, "", 3)
	require.NoError(t, err)
	var ids []string
	for _, s := range page.Schedules {
		ids = append(ids, s.ScheduleID)
		require.Nil(t, s.Plan, "lists leave plans out")
	}
	require.Equal(t, []string{"B", "a", "b"}, ids, "bytewise id order")
	require.NotEmpty(t, page.NextCursor)
	page, err = b.svc.List(t.Context(), viewer, page.NextCursor, 3)
	require.NoError(t, err)
	require.Len(t, page.Schedules, 1)
	require.Equal(t, "c", page.Schedules[0].ScheduleID)
	require.Empty(t, page.NextCursor)

	page, err = b.svc.List(t.Context(), other, "", 0)
	require.NoError(t, err)
	require.Empty(t, page.Schedules, "another tenant's schedules are not listed")
	_, err = b.svc.List(t.Context(), op, "", 201)
	intaketest.RequireRefused(t, err, api.CodeInvalidArgument, "limit")
	_, err = b.svc.List(t.Context(), op, "!!", 0)
	intaketest.RequireRefused(t, err, api.CodeInvalidArgument, "cursor")
}

// TestRefusedStartIsRecorded: a fire the gateway refuses for good (the
// plan breaks a limit lowered since the schedule was created) is a skip
// with reason refused, and the schedule goes on.
func TestRefusedStartIsRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t, schedule.Config{})
	b.create(t, request("r", "0 * * * *"))
	_, err := b.db.Pool.Exec(t.Context(), `UPDATE schedules SET plan = '{"planId":"nightly","planVersion":"1","steps":[]}'`)
	require.NoError(t, err)
	b.tickAt(t, at(9, 0).Add(time.Second))
	s := b.get(t, "r")
	require.Empty(t, b.runs(t, "r"))
	require.Equal(t, api.SkipCounts{Refused: 1}, s.Skipped)
	require.Contains(t, s.RecentSkips[0].Message, "InvalidArgument")
	require.Equal(t, at(10, 0), *s.NextFireAt)
}
