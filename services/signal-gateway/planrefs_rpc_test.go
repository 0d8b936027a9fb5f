package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"

	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// TestRPCScheduleByPlanRef: schedule.create takes a planRef as POST
// /v1/schedules does: the schedule keeps the ref, and its fire starts a
// run of the version the ref resolves to, pinned or latest, recorded in
// full. Both plan and planRef, or a ref that does not resolve, are
// refused in the JSON-RPC error shape, and nothing is stored.
func TestRPCScheduleByPlanRef(t *testing.T) {
	t.Parallel()
	clk := intaketest.NewClock(time.Date(2026, 3, 2, 8, 59, 30, 0, time.UTC))
	s := setup(t, gateway.Config{Intake: gateway.IntakeConfig{Now: clk.Now},
		Schedules: gateway.ScheduleConfig{PollInterval: 10 * time.Millisecond}})
	v1 := s.push(t, versionDoc("1"), http.StatusCreated)
	v2 := s.push(t, versionDoc("2"), http.StatusCreated)
	before := s.counts(t)

	both := refSchedule("both", "1")
	both["plan"] = json.RawMessage(planDoc)
	for name, tc := range map[string]struct {
		params map[string]any
		code   int
		weft   string
		field  string
	}{
		"both plan and planRef": {both, -32602, api.CodeInvalidArgument, "planRef"},
		"unknown version":       {refSchedule("typo", "9"), -32004, api.CodeNotFound, ""},
		"unknown plan": {scheduleBody("nope", "plan", nil, "planRef", map[string]any{"planId": "nope", "planVersion": "1"}),
			-32004, api.CodeNotFound, ""},
	} {
		r := s.rpcAs(t, operatorToken, "schedule.create", tc.params)
		require.Nil(t, r.Result, name)
		require.NotNil(t, r.Error, name)
		require.JSONEq(t, `1`, string(r.ID), "%s: the error answers the call", name)
		require.Equal(t, tc.code, r.Error.Code, name)
		require.Equal(t, tc.weft, r.Error.Data.Code, name)
		if tc.field != "" {
			require.Equal(t, tc.field, r.Error.Data.Details["field"], name)
		}
	}
	require.Zero(t, s.rows(t, "schedules", ""), "the refused creates store no schedule")
	require.Equal(t, before, s.counts(t), "and start nothing")

	pinned := rpcResult[api.Schedule](t, s, "schedule.create", refSchedule("pinned", "1"))
	require.Equal(t, &api.PlanRef{PlanID: "hello", PlanVersion: "1"}, pinned.PlanRef)
	require.Nil(t, pinned.Plan, "a schedule by planRef holds no plan")
	require.Equal(t, "1", pinned.PlanVersion)
	a := s.get(t, "/v1/schedules/pinned", viewerToken)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Equal(t, pinned.PlanRef, decodeAs[api.Schedule](t, a.body).PlanRef, "REST reads the ref JSON-RPC stored")
	tracking := rpcResult[api.Schedule](t, s, "schedule.create", refSchedule("tracking", api.PlanVersionLatest))
	require.Equal(t, api.PlanVersionLatest, tracking.PlanVersion)

	clk.Set(time.Date(2026, 3, 2, 9, 0, 5, 0, time.UTC))
	approved := s.approvedPlan(t, s.firedRun(t, "pinned:2026-03-02T09:00:00Z"))
	require.Equal(t, "1", approved.PlanVersion, "the pinned version, not the newest")
	require.JSONEq(t, string(v1.Plan), string(approved.Plan), "RunApproved holds the resolved plan in full")
	approved = s.approvedPlan(t, s.firedRun(t, "tracking:2026-03-02T09:00:00Z"))
	require.Equal(t, "2", approved.PlanVersion, "latest resolves to the newest")
	require.JSONEq(t, string(v2.Plan), string(approved.Plan))
}
