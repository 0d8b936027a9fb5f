package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/plan"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// keyedStart is a start of a plan under the concurrency limit limit, with
// input and extra fields of the start (",\"priority\":9").
func keyedStart(limit, input, extra string) string {
	return `{"tenantId":"acme","projectId":"p","environmentId":"dev","planId":"keyed","planVersion":"1",` +
		`"runRequestId":"keyed-1","plan":{"planId":"keyed","planVersion":"1","concurrency":[` + limit + `],` +
		`"steps":[{"id":"a","activity":"echo"}]},"input":` + input + extra + `}`
}

// Bad flow control is refused on every transport, each problem at its
// field's path, before anything is stored: a key that yields no string
// for the start's input, a limit of 0 or over the maximum, an unknown
// strategy, a priority out of 1 to 5. The edges pass.
func TestStartRefusesBadFlowControl(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	wantStatus := map[string]int{"REST": http.StatusBadRequest, "JSON-RPC": jsonrpc.CodeInvalidParams, "NATS": http.StatusBadRequest}
	cases := map[string]struct{ body, path, code string }{
		"a key that is not a string": {keyedStart(`{"key":"input.customerId","limit":2}`, `{"customerId":42}`, ""),
			"plan.concurrency[0].key", plan.CodeInvalidConcurrency},
		"a limit of 0": {keyedStart(`{"key":"input.customerId","limit":0}`, `{"customerId":"a"}`, ""),
			"plan.concurrency[0].limit", plan.CodeInvalidConcurrency},
		"a limit over the maximum": {keyedStart(`{"key":"input.customerId","limit":10001}`, `{"customerId":"a"}`, ""),
			"plan.concurrency[0].limit", plan.CodeInvalidConcurrency},
		"a dynamic limit over the maximum": {keyedStart(`{"key":"input.customerId","limit":"input.n"}`, `{"customerId":"a","n":20000}`, ""),
			"plan.concurrency[0].limit", plan.CodeInvalidConcurrency},
		"an unknown strategy": {keyedStart(`{"key":"input.customerId","limit":1,"strategy":"LIFO"}`, `{"customerId":"a"}`, ""),
			"plan.concurrency[0].strategy", plan.CodeInvalidConcurrency},
		"a priority of 6": {keyedStart(`{"key":"input.customerId","limit":1}`, `{"customerId":"a"}`, `,"priority":6`),
			"priority", api.ProblemInvalid},
		"a priority of -1": {keyedStart(`{"key":"input.customerId","limit":1}`, `{"customerId":"a"}`, `,"priority":-1`),
			"priority", api.ProblemInvalid},
	}
	for name, c := range cases {
		for _, r := range startRefusals(t, s, c.body) {
			require.Equal(t, wantStatus[r.transport], r.status, "%s: %s", name, r.transport)
			ps := problemsOf(t, r.err)
			require.Len(t, ps, 1, "%s: %s: %+v", name, r.transport, ps)
			require.Equal(t, c.path, ps[0].Path, "%s: %s", name, r.transport)
			require.Equal(t, c.code, ps[0].Code, "%s: %s", name, r.transport)
		}
	}
	require.Zero(t, s.counts(t), "a refused start writes nothing")

	edges := keyedStart(`{"key":"input.customerId","limit":10000}`, `{"customerId":"a"}`, `,"priority":5`)
	a := s.post(t, "/v1/runs", []byte(edges))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
}

// approvedPriority returns the priority run's RunApproved records.
func (s *stack) approvedPriority(t *testing.T, runID string) int {
	t.Helper()
	return s.approved(t, runID).Priority
}

// A start's priority is recorded on its RunApproved; a schedule's and a
// trigger's are checked as a start's (a 400 at priority, nothing
// stored), answered, part of the definition a repeated create compares,
// and carried by the runs they start.
func TestPriorityOfStartsSchedulesAndTriggers(t *testing.T) {
	t.Parallel()
	clk := intaketest.NewClock(time.Date(2026, 3, 2, 8, 59, 30, 0, time.UTC))
	s := setup(t, gateway.Config{Intake: gateway.IntakeConfig{Now: clk.Now},
		Schedules: gateway.ScheduleConfig{PollInterval: 10 * time.Millisecond}})
	a := s.post(t, "/v1/runs", []byte(keyedStart(`{"key":"input.customerId","limit":1}`, `{"customerId":"a"}`, `,"priority":1`)))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.Equal(t, 1, s.approvedPriority(t, decodeAs[api.StartRunResult](t, a.body).RunID))

	a = s.post(t, "/v1/schedules", scheduleBody("urgent", "cron", "* * * * *", "priority", 6))
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	require.Equal(t, "priority", problemsOf(t, a.errorBody(t))[0].Path)
	require.Zero(t, s.rows(t, "schedules", ""))
	body := scheduleBody("urgent", "cron", "* * * * *", "timezone", nil, "priority", 5)
	a = s.post(t, "/v1/schedules", body)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.Equal(t, 5, decodeAs[api.Schedule](t, a.body).Priority)
	a = s.post(t, "/v1/schedules", scheduleBody("urgent", "cron", "* * * * *", "timezone", nil, "priority", 4))
	require.Equal(t, http.StatusConflict, a.status, "another priority is another definition: %s", a.body)
	clk.Set(time.Date(2026, 3, 2, 9, 0, 5, 0, time.UTC))
	var runID string
	require.Eventually(t, func() bool {
		err := s.db.Pool.QueryRow(context.Background(), `SELECT run_id::text FROM run_requests
			WHERE run_request_id = 'urgent:2026-03-02T09:00:00Z'`).Scan(&runID)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 5, s.approvedPriority(t, runID))

	trigger := map[string]any{"triggerId": "orders", "tenantId": "acme", "projectId": "p", "environmentId": "dev",
		"plan": json.RawMessage(planDoc), "priority": -2}
	a = s.post(t, "/v1/triggers", trigger)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	require.Equal(t, "priority", problemsOf(t, a.errorBody(t))[0].Path)
	require.Zero(t, s.rows(t, "triggers", ""))
	trigger["priority"] = 2
	a = s.post(t, "/v1/triggers", trigger)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	a, err := s.do(t, http.MethodGet, "/v1/triggers/orders", operatorToken, nil)
	require.NoError(t, err)
	require.Equal(t, 2, decodeAs[api.Trigger](t, a.body).Priority)
	a = s.post(t, "/v1/triggers/orders/events", map[string]any{"eventId": "e1", "payload": map[string]any{"n": 1}})
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.Equal(t, 2, s.approvedPriority(t, decodeAs[api.TriggerEventResult](t, a.body).RunID))
}
