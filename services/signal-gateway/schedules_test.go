package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"

	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// scheduleBody is a schedule of planDoc in acme, with fields changed by
// the pairs in kv (a nil value removes a field).
func scheduleBody(id string, kv ...any) map[string]any {
	b := map[string]any{"scheduleId": id, "tenantId": "acme", "projectId": "p", "environmentId": "dev",
		"cron": "0 9 * * *", "timezone": "Europe/Paris", "plan": json.RawMessage(planDoc)}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(b, kv[i].(string))
			continue
		}
		b[kv[i].(string)] = kv[i+1]
	}
	return b
}

func decodeAs[T any](t *testing.T, raw []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(raw, &v), "%s", raw)
	return v
}

// TestScheduleREST walks a schedule through every REST endpoint.
func TestScheduleREST(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	a := s.post(t, "/v1/schedules", scheduleBody("nightly"))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	created := decodeAs[api.Schedule](t, a.body)
	require.Equal(t, "hello", created.PlanID)
	require.NotNil(t, created.NextFireAt)

	a = s.post(t, "/v1/schedules", scheduleBody("nightly"))
	require.Equal(t, http.StatusOK, a.status, "the same create again: %s", a.body)
	a = s.post(t, "/v1/schedules", scheduleBody("nightly", "cron", "0 10 * * *"))
	require.Equal(t, http.StatusConflict, a.status)
	require.Equal(t, api.CodeAlreadyExists, a.errorBody(t).Code)

	a, err := s.do(t, http.MethodGet, "/v1/schedules/nightly", viewerToken, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, created, decodeAs[api.Schedule](t, a.body))

	body, err := json.Marshal(scheduleBody("", "scheduleId", nil, "overlapPolicy", "buffer-one"))
	require.NoError(t, err)
	a, err = s.do(t, http.MethodPut, "/v1/schedules/nightly", operatorToken, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Equal(t, api.OverlapBufferOne, decodeAs[api.Schedule](t, a.body).OverlapPolicy)

	a, err = s.do(t, http.MethodPost, "/v1/schedules/nightly/pause", operatorToken, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, a.status, "no body: %s", a.body)
	require.True(t, decodeAs[api.Schedule](t, a.body).Paused)
	a = s.post(t, "/v1/schedules/nightly/resume", map[string]any{})
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.False(t, decodeAs[api.Schedule](t, a.body).Paused)
	a = s.post(t, "/v1/schedules/nightly/pause", map[string]any{"now": true})
	require.Equal(t, http.StatusBadRequest, a.status, "pause takes no parameters")

	s.post(t, "/v1/schedules", scheduleBody("another"))
	a, err = s.do(t, http.MethodGet, "/v1/schedules?limit=1", operatorToken, nil)
	require.NoError(t, err)
	page := decodeAs[api.ScheduleList](t, a.body)
	require.Len(t, page.Schedules, 1)
	require.Equal(t, "another", page.Schedules[0].ScheduleID)
	require.Nil(t, page.Schedules[0].Plan)
	a, err = s.do(t, http.MethodGet, "/v1/schedules?limit=1&cursor="+page.NextCursor, operatorToken, nil)
	require.NoError(t, err)
	require.Equal(t, "nightly", decodeAs[api.ScheduleList](t, a.body).Schedules[0].ScheduleID)
	for _, q := range []string{"?limit=0", "?limit=201", "?limit=x", "?cursor=%25", "?status=x"} {
		a, err = s.do(t, http.MethodGet, "/v1/schedules"+q, operatorToken, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, a.status, q)
	}

	a, err = s.do(t, http.MethodGet, "/v1/schedules/nightly", strangerToken, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, a.status, "another tenant's schedule is not found")
	a, err = s.do(t, http.MethodDelete, "/v1/schedules/nightly", viewerToken, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, a.status)
	a, err = s.do(t, http.MethodDelete, "/v1/schedules/nightly", operatorToken, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, a.status)
	a, err = s.do(t, http.MethodPatch, "/v1/schedules/nightly", operatorToken, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusMethodNotAllowed, a.status)
	require.Equal(t, "GET, PUT, DELETE", a.header.Get("Allow"))
}

// badSchedules are create requests each transport must refuse before
// anything is stored, with the field at fault.
func badSchedules() []struct {
	name, field, code string
	body              map[string]any
} {
	return []struct {
		name, field, code string
		body              map[string]any
	}{
		{"invalid cron", "cron", api.CodeInvalidArgument, scheduleBody("x", "cron", "every day")},
		{"unknown timezone", "timezone", api.CodeInvalidArgument, scheduleBody("x", "timezone", "Moon/Base")},
		{"unknown misfire policy", "misfirePolicy", api.CodeInvalidArgument, scheduleBody("x", "misfirePolicy", "retry")},
		{"unknown overlap policy", "overlapPolicy", api.CodeInvalidArgument, scheduleBody("x", "overlapPolicy", "queue")},
		{"missing plan", "plan", api.CodeInvalidArgument, scheduleBody("x", "plan", nil)},
		{"oversize input", "input", api.CodePayloadTooLarge, scheduleBody("x", "input", strings.Repeat("i", 64<<10))},
		{"input not an object", "input", api.CodeInvalidArgument, scheduleBody("x", "input", []int{1})},
		{"input with a fire's key", "input", api.CodeInvalidArgument, scheduleBody("x", "input", map[string]any{"schedule": "x"})},
		{"id with a colon", "scheduleId", api.CodeInvalidArgument, scheduleBody("a:b")},
	}
}

// TestScheduleBadInputEachTransport: REST answers 400/413 with the REST
// error shape, JSON-RPC -32602 with the Weft error as data; nothing is
// stored.
func TestScheduleBadInputEachTransport(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	for _, tc := range badSchedules() {
		a := s.post(t, "/v1/schedules", tc.body)
		e := a.errorBody(t)
		require.Equal(t, tc.code, e.Code, "%s: %s", tc.name, a.body)
		require.Equal(t, tc.field, e.Details["field"], "%s: %s", tc.name, a.body)

		params, err := json.Marshal(tc.body)
		require.NoError(t, err)
		r := s.rpcOne(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"schedule.create","params":%s,"id":1}`, params))
		require.NotNil(t, r.Error, tc.name)
		require.Equal(t, jsonrpc.CodeInvalidParams, r.Error.Code, tc.name)
		require.Equal(t, tc.code, r.Error.Data.Code, tc.name)
		require.Equal(t, tc.field, r.Error.Data.Details["field"], tc.name)
	}
	// The whole body over the gateway's limit: 413 before decoding.
	small := setup(t, gateway.Config{DisableScheduler: true, MaxBodyBytes: 1 << 10})
	a := small.post(t, "/v1/schedules", scheduleBody("x", "input", strings.Repeat("i", 1<<10)))
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	a = small.post(t, "/v1/schedules", []byte(`{"tenantId":"acme","cronn":"x"}`))
	require.Equal(t, http.StatusBadRequest, a.status, "an unknown field")
	require.Zero(t, s.rows(t, "schedules", ""))
	require.Zero(t, small.rows(t, "schedules", ""))
}

// TestScheduleJSONRPC: every schedule method over JSON-RPC.
func TestScheduleJSONRPC(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	call := func(method string, params any) rpcResponse {
		raw, err := json.Marshal(params)
		require.NoError(t, err)
		return s.rpcOne(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s,"id":1}`, method, raw))
	}
	r := call("schedule.create", scheduleBody("rpc"))
	require.Nil(t, r.Error)
	require.Equal(t, "rpc", decodeAs[api.Schedule](t, r.Result).ScheduleID)
	r = call("schedule.create", scheduleBody("rpc", "cron", "0 1 * * *"))
	require.Equal(t, jsonrpc.CodeConflict, r.Error.Code)
	require.Equal(t, api.CodeAlreadyExists, r.Error.Data.Code)

	r = call("schedule.update", scheduleBody("", "scheduleId", nil))
	require.Equal(t, jsonrpc.CodeInvalidParams, r.Error.Code, "update names its schedule")
	r = call("schedule.update", scheduleBody("rpc", "cron", "15 9 * * *"))
	require.Nil(t, r.Error)
	require.Equal(t, "15 9 * * *", decodeAs[api.Schedule](t, r.Result).Cron)

	for _, m := range []string{"schedule.pause", "schedule.resume", "schedule.get"} {
		r = call(m, map[string]any{"scheduleId": "rpc"})
		require.Nil(t, r.Error, m)
	}
	r = call("schedule.get", map[string]any{})
	require.Equal(t, jsonrpc.CodeInvalidParams, r.Error.Code)
	r = call("schedule.list", map[string]any{"limit": 10})
	require.Len(t, decodeAs[api.ScheduleList](t, r.Result).Schedules, 1)
	r = call("schedule.delete", map[string]any{"scheduleId": "rpc"})
	require.Nil(t, r.Error)
	require.JSONEq(t, `{"scheduleId":"rpc","deleted":true}`, string(r.Result))
	r = call("schedule.get", map[string]any{"scheduleId": "rpc"})
	require.Equal(t, jsonrpc.CodeNotFound, r.Error.Code)
}

// TestGatewayRunsTheScheduler: the gateway's own scheduler loop fires a
// due schedule through the same start path as POST /v1/runs.
func TestGatewayRunsTheScheduler(t *testing.T) {
	t.Parallel()
	clk := intaketest.NewClock(time.Date(2026, 3, 2, 8, 59, 30, 0, time.UTC))
	s := setup(t, gateway.Config{Intake: gateway.IntakeConfig{Now: clk.Now},
		Schedules: gateway.ScheduleConfig{PollInterval: 10 * time.Millisecond}})
	a := s.post(t, "/v1/schedules", scheduleBody("minutely", "cron", "* * * * *", "timezone", nil))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	clk.Set(time.Date(2026, 3, 2, 9, 0, 5, 0, time.UTC))
	require.Eventually(t, func() bool {
		var n int
		err := s.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM run_requests
			WHERE run_request_id = 'minutely:2026-03-02T09:00:00Z'`).Scan(&n)
		return err == nil && n == 1
	}, 10*time.Second, 10*time.Millisecond)
}
