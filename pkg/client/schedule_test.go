package client_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

// TestCreateScheduleIDStableAcrossRetries: an empty ScheduleID is set once,
// before the first attempt, and sent on the retry.
func TestCreateScheduleIDStableAcrossRetries(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{
		errAnswer(t, http.StatusServiceUnavailable, api.CodeUnavailable, "shutting down", nil),
		jsonAnswer(t, http.StatusCreated, api.Schedule{ScheduleID: "s"}),
	})
	s, err := b.client.CreateSchedule(t.Context(), api.ScheduleRequest{TenantID: "t", Cron: "0 9 * * *",
		Plan: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.Equal(t, "s", s.ScheduleID)
	reqs := b.gw.requests()
	require.Len(t, reqs, 2)
	id := requireUUIDv7(t, reqs[0].body["scheduleId"])
	require.Equal(t, id, reqs[1].body["scheduleId"], "the retry sends the same id")
	require.Equal(t, "POST /v1/schedules", reqs[0].method+" "+reqs[0].escapedPath)
}

// TestScheduleAndTriggerCalls: each call's method, path and body.
func TestScheduleAndTriggerCalls(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{jsonAnswer(t, http.StatusOK, map[string]any{})})
	ctx := t.Context()
	_, err := b.client.UpdateSchedule(ctx, "a b", api.ScheduleRequest{Cron: "0 9 * * *"})
	require.NoError(t, err)
	_, err = b.client.GetSchedule(ctx, "s")
	require.NoError(t, err)
	_, err = b.client.ListSchedules(ctx, client.Page{Limit: 5, Cursor: "c"})
	require.NoError(t, err)
	_, err = b.client.PauseSchedule(ctx, "s")
	require.NoError(t, err)
	_, err = b.client.ResumeSchedule(ctx, "s")
	require.NoError(t, err)
	require.NoError(t, b.client.DeleteSchedule(ctx, "s"))
	_, err = b.client.ListTriggers(ctx, client.Page{})
	require.NoError(t, err)
	_, err = b.client.GetTrigger(ctx, "tr")
	require.NoError(t, err)
	require.NoError(t, b.client.DeleteTrigger(ctx, "tr"))
	res, err := b.client.SendTriggerEvent(ctx, "tr", api.TriggerEvent{Payload: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	require.NotNil(t, res)

	var got []string
	for _, r := range b.gw.requests() {
		got = append(got, r.method+" "+r.escapedPath)
	}
	require.Equal(t, []string{
		"PUT /v1/schedules/a%20b", "GET /v1/schedules/s", "GET /v1/schedules", "POST /v1/schedules/s/pause",
		"POST /v1/schedules/s/resume", "DELETE /v1/schedules/s", "GET /v1/triggers", "GET /v1/triggers/tr",
		"DELETE /v1/triggers/tr", "POST /v1/triggers/tr/events",
	}, got)
	reqs := b.gw.requests()
	requireUUIDv7(t, reqs[len(reqs)-1].body["eventId"])

	_, err = b.client.UpdateSchedule(ctx, "s", api.ScheduleRequest{ScheduleID: "other"})
	require.ErrorIs(t, err, client.ErrInvalidRequest)
	_, err = b.client.GetSchedule(ctx, "..")
	require.ErrorIs(t, err, client.ErrInvalidRequest)
	require.Len(t, b.gw.requests(), len(reqs), "refused calls send nothing")
}

// TestScheduleCallErrors: an error answer is an *Error with its code, and
// no result.
func TestScheduleCallErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{errAnswer(t, http.StatusConflict, api.CodeAlreadyExists, "exists", nil)})
	s, err := b.client.CreateSchedule(t.Context(), api.ScheduleRequest{ScheduleID: "s"})
	require.Nil(t, s)
	require.True(t, client.IsCode(err, api.CodeAlreadyExists))
}
