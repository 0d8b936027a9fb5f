package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"

	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// helloRef is a planRef to acme's plan hello at version.
func helloRef(version string) map[string]any {
	return map[string]any{"planId": "hello", "planVersion": version}
}

// refSchedule is a minutely schedule of hello by planRef at version,
// whose fires may overlap (the plan's runs wait for a signal).
func refSchedule(id, version string) map[string]any {
	return scheduleBody(id, "plan", nil, "planRef", helloRef(version), "cron", "* * * * *", "timezone", nil,
		"overlapPolicy", api.OverlapAllow)
}

// refTrigger is a trigger of hello by planRef at version.
func refTrigger(id, version string) map[string]any {
	return map[string]any{"triggerId": id, "tenantId": "acme", "projectId": "p", "environmentId": "dev",
		"planRef": helloRef(version)}
}

// firedRun waits for the run the fire requestID started and returns its
// run id.
func (s *stack) firedRun(t *testing.T, requestID string) string {
	t.Helper()
	var runID string
	require.Eventually(t, func() bool {
		err := s.db.Pool.QueryRow(context.Background(),
			`SELECT run_id::text FROM run_requests WHERE run_request_id = $1`, requestID).Scan(&runID)
		require.True(t, err == nil || errors.Is(err, pgx.ErrNoRows), "%v", err)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, requestID)
	return runID
}

// TestScheduleByPlanRef: a schedule may name a registered version; each
// fire's run records the resolved plan in full, "latest" follows a newly
// pushed version, and a fire whose version is archived is skipped as
// refused while the other schedule goes on.
func TestScheduleByPlanRef(t *testing.T) {
	t.Parallel()
	clk := intaketest.NewClock(time.Date(2026, 3, 2, 8, 59, 30, 0, time.UTC))
	s := setup(t, gateway.Config{Intake: gateway.IntakeConfig{Now: clk.Now},
		Schedules: gateway.ScheduleConfig{PollInterval: 10 * time.Millisecond}})
	v1 := s.push(t, versionDoc("1"), http.StatusCreated)
	s.push(t, versionDoc("2"), http.StatusCreated)

	a := s.post(t, "/v1/schedules", refSchedule("pinned", "1"))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	pinned := decodeAs[api.Schedule](t, a.body)
	require.Equal(t, &api.PlanRef{PlanID: "hello", PlanVersion: "1"}, pinned.PlanRef)
	require.Nil(t, pinned.Plan, "a schedule by planRef holds no plan")
	require.Equal(t, "1", pinned.PlanVersion)
	a = s.post(t, "/v1/schedules", refSchedule("pinned", "1"))
	require.Equal(t, http.StatusOK, a.status, "the same create again: %s", a.body)
	a = s.post(t, "/v1/schedules", refSchedule("pinned", "2"))
	require.Equal(t, http.StatusConflict, a.status, "another ref is another definition: %s", a.body)
	a = s.post(t, "/v1/schedules", refSchedule("tracking", api.PlanVersionLatest))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.Equal(t, api.PlanVersionLatest, decodeAs[api.Schedule](t, a.body).PlanVersion)

	clk.Set(time.Date(2026, 3, 2, 9, 0, 5, 0, time.UTC))
	approved := s.approvedPlan(t, s.firedRun(t, "pinned:2026-03-02T09:00:00Z"))
	require.Equal(t, "1", approved.PlanVersion)
	require.JSONEq(t, string(v1.Plan), string(approved.Plan), "RunApproved holds the full plan")
	require.Equal(t, "2", s.approvedPlan(t, s.firedRun(t, "tracking:2026-03-02T09:00:00Z")).PlanVersion)

	s.push(t, versionDoc("3"), http.StatusCreated)
	a = s.post(t, "/v1/plans/hello/versions/1/archive?projectId=p", []byte("{}"))
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	clk.Set(time.Date(2026, 3, 2, 9, 1, 5, 0, time.UTC))
	require.Equal(t, "3", s.approvedPlan(t, s.firedRun(t, "tracking:2026-03-02T09:01:00Z")).PlanVersion,
		"latest follows the newly pushed version")
	var refused api.Schedule
	require.Eventually(t, func() bool {
		refused = decodeAs[api.Schedule](t, s.get(t, "/v1/schedules/pinned", viewerToken).body)
		return refused.Skipped.Refused == 1
	}, 10*time.Second, 10*time.Millisecond)
	require.Len(t, refused.RecentSkips, 1)
	require.Equal(t, api.SkipRefused, refused.RecentSkips[0].Reason)
	require.Contains(t, refused.RecentSkips[0].Message, "archived")
	var n int
	require.NoError(t, s.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM run_requests WHERE run_request_id = 'pinned:2026-03-02T09:01:00Z'`).Scan(&n))
	require.Zero(t, n, "the archived version's fire starts nothing")
}

// TestScheduleByPlanRefRefusals: a ref that does not resolve is refused
// at create and at update as a start by it is; both plan and planRef, or
// an incomplete ref, are InvalidArgument; nothing is stored.
func TestScheduleByPlanRefRefusals(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	s.push(t, versionDoc("1"), http.StatusCreated)
	both := refSchedule("x", "1")
	both["plan"] = json.RawMessage(planDoc)
	for name, tc := range map[string]struct {
		body   map[string]any
		status int
		code   string
	}{
		"unknown version": {refSchedule("x", "9"), http.StatusNotFound, api.CodeNotFound},
		"unknown plan":    {scheduleBody("x", "plan", nil, "planRef", map[string]any{"planId": "nope", "planVersion": "1"}), http.StatusNotFound, api.CodeNotFound},
		"both":            {both, http.StatusBadRequest, api.CodeInvalidArgument},
		"incomplete":      {scheduleBody("x", "plan", nil, "planRef", map[string]any{"planId": "hello"}), http.StatusBadRequest, api.CodeInvalidArgument},
		"neither":         {scheduleBody("x", "plan", nil), http.StatusBadRequest, api.CodeInvalidArgument},
	} {
		a := s.post(t, "/v1/schedules", tc.body)
		require.Equal(t, tc.status, a.status, "%s: %s", name, a.body)
		require.Equal(t, tc.code, a.errorBody(t).Code, name)
	}
	require.Zero(t, s.rows(t, "schedules", ""))

	a := s.post(t, "/v1/schedules", scheduleBody("nightly"))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	put := func(body map[string]any) answer {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		a, err := s.do(t, http.MethodPut, "/v1/schedules/nightly", operatorToken, raw)
		require.NoError(t, err)
		return a
	}
	a = put(refSchedule("nightly", "9"))
	require.Equal(t, http.StatusNotFound, a.status, "%s", a.body)
	a = put(refSchedule("nightly", "1"))
	require.Equal(t, http.StatusOK, a.status, "a schedule may move from its plan to a ref: %s", a.body)
	moved := decodeAs[api.Schedule](t, a.body)
	require.Equal(t, &api.PlanRef{PlanID: "hello", PlanVersion: "1"}, moved.PlanRef)
	require.Nil(t, moved.Plan)
	a = put(scheduleBody("nightly"))
	require.Equal(t, http.StatusOK, a.status, "and back: %s", a.body)
	require.Nil(t, decodeAs[api.Schedule](t, a.body).PlanRef)
}

// TestTriggerByPlanRef: a trigger may name a registered version, pinned:
// each event starts a run of it, recorded in full, and a redelivered
// event is the duplicate whatever was pushed since; an event whose
// version is archived is refused with PlanArchived and starts nothing; a
// ref that does not resolve is refused at create. (TestTriggerFollowsLatest
// follows "latest".)
func TestTriggerByPlanRef(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	v1 := s.push(t, versionDoc("1"), http.StatusCreated)

	a := s.post(t, "/v1/triggers", refTrigger("orders", "1"))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	tr := decodeAs[api.Trigger](t, a.body)
	require.Equal(t, &api.PlanRef{PlanID: "hello", PlanVersion: "1"}, tr.PlanRef)
	require.Nil(t, tr.Plan)
	a = s.post(t, "/v1/triggers", refTrigger("orders", "1"))
	require.Equal(t, http.StatusOK, a.status, "the same create again: %s", a.body)

	send := func(trigger, eventID string) answer {
		return s.post(t, "/v1/triggers/"+trigger+"/events", map[string]any{"eventId": eventID, "payload": map[string]any{"n": 1}})
	}
	a = send("orders", "evt-1")
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	first := decodeAs[api.TriggerEventResult](t, a.body).RunID
	approved := s.approvedPlan(t, first)
	require.Equal(t, "1", approved.PlanVersion)
	require.JSONEq(t, string(v1.Plan), string(approved.Plan), "RunApproved holds the full plan")
	s.push(t, versionDoc("2"), http.StatusCreated)
	a = send("orders", "evt-1")
	require.Equal(t, http.StatusOK, a.status, "a redelivery after a push: %s", a.body)
	require.Equal(t, first, decodeAs[api.TriggerEventResult](t, a.body).RunID)

	before := s.counts(t)
	a = s.post(t, "/v1/triggers", refTrigger("pinned", "2"))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	a = s.post(t, "/v1/plans/hello/versions/2/archive?projectId=p", []byte("{}"))
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	a = send("pinned", events.NewRunID())
	require.Equal(t, http.StatusConflict, a.status, "%s", a.body)
	require.Equal(t, api.CodePlanArchived, a.errorBody(t).Code)
	require.Equal(t, before, s.counts(t), "an archived version starts nothing")

	a = s.post(t, "/v1/triggers", refTrigger("typo", "9"))
	require.Equal(t, http.StatusNotFound, a.status, "%s", a.body)
	both := refTrigger("both", "1")
	both["plan"] = json.RawMessage(planDoc)
	a = s.post(t, "/v1/triggers", both)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	require.Equal(t, 2, s.rows(t, "triggers", ""), "the refused creates store nothing")
}
