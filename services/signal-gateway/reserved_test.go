package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/streams"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// requireStartReserved requires a plain start with runRequestId id to be
// refused on every transport as an InvalidArgument about runRequestId:
// REST 400, JSON-RPC -32602 with the Weft error as data, NATS
// Weft-Status 400.
func requireStartReserved(t *testing.T, s *stack, id string) {
	t.Helper()
	a := s.post(t, "/v1/runs", startBody(id))
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	e := a.errorBody(t)
	require.Equal(t, api.CodeInvalidArgument, e.Code)
	require.Equal(t, "runRequestId", e.Details["field"])
	require.Contains(t, e.Message, "reserved")

	params, err := json.Marshal(startBody(id))
	require.NoError(t, err)
	r := s.rpcOne(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"run.start","params":%s,"id":1}`, params))
	require.NotNil(t, r.Error)
	require.Equal(t, jsonrpc.CodeInvalidParams, r.Error.Code)
	require.Equal(t, api.CodeInvalidArgument, r.Error.Data.Code)
	require.Equal(t, "runRequestId", r.Error.Data.Details["field"])

	status, body, _ := s.request(t, streams.RunStartSubject, operatorToken, params)
	require.Equal(t, http.StatusBadRequest, status, "%s", body)
}

// Issue 17, item 9: a plain start may not take the run request id a
// schedule's fire will use ({scheduleId}:{time}); the fire then starts its
// own run, from the schedule.
func TestPlainStartCannotPreemptAScheduleFire(t *testing.T) {
	t.Parallel()
	clk := intaketest.NewClock(time.Date(2026, 3, 2, 8, 59, 30, 0, time.UTC))
	s := setup(t, gateway.Config{Intake: gateway.IntakeConfig{Now: clk.Now},
		Schedules: gateway.ScheduleConfig{PollInterval: 10 * time.Millisecond}})
	a := s.post(t, "/v1/schedules", scheduleBody("minutely", "cron", "* * * * *", "timezone", nil))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)

	const fireID = "minutely:2026-03-02T09:00:00Z"
	requireStartReserved(t, s, fireID)
	require.Zero(t, s.counts(t).requests, "no plain start claimed a run request")

	clk.Set(time.Date(2026, 3, 2, 9, 0, 5, 0, time.UTC))
	var scheduleID string
	require.Eventually(t, func() bool {
		err := s.db.Pool.QueryRow(context.Background(), `SELECT e.event_data->'input'->'schedule'->>'id'
			FROM run_requests r JOIN run_events e ON e.run_id = r.run_id AND e.run_seq = 1
			WHERE r.run_request_id = $1`, fireID).Scan(&scheduleID)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the fire starts its run")
	require.Equal(t, "minutely", scheduleID, "the fire's run is the schedule's")
}

// The same for a trigger's event ({triggerId}:{eventId}); a plain start
// without ':' is still taken.
func TestPlainStartCannotPreemptATriggerEvent(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	s.createTrigger(t, "orders")
	requireStartReserved(t, s, "orders:evt-1")

	a := s.post(t, "/v1/triggers/orders/events", map[string]any{"eventId": "evt-1"})
	require.Equal(t, http.StatusCreated, a.status, "the event starts its own run: %s", a.body)
	require.False(t, decodeAs[api.TriggerEventResult](t, a.body).Duplicate)

	a = s.post(t, "/v1/runs", startBody("orders-evt-1"))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
}
