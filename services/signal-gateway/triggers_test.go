package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/streams"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

func (s *stack) createTrigger(t *testing.T, id string) {
	t.Helper()
	a := s.post(t, "/v1/triggers", map[string]any{"triggerId": id, "tenantId": "acme", "projectId": "p",
		"environmentId": "dev", "plan": json.RawMessage(planDoc)})
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
}

// TestTriggerEventsAcrossTransports: one event id delivered over REST,
// JSON-RPC and NATS starts one run; every redelivery (of the same
// payload) answers it with duplicate true. An event without an id is given one.
func TestTriggerEventsAcrossTransports(t *testing.T) {
	t.Parallel()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	s := setup(t, gateway.Config{DisableScheduler: true, MeterProvider: mp})
	s.createTrigger(t, "orders")

	ev := map[string]any{"eventId": "evt-1", "payload": map[string]any{"order": 1}}
	a := s.post(t, "/v1/triggers/orders/events", ev)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.Equal(t, "false", a.header.Get("Weft-Duplicate"))
	first := decodeAs[api.TriggerEventResult](t, a.body)
	require.Equal(t, "orders:evt-1", first.RunRequestID)
	require.Equal(t, "evt-1", first.EventID)

	a = s.post(t, "/v1/triggers/orders/events", ev)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, "true", a.header.Get("Weft-Duplicate"))
	require.Equal(t, first.RunID, decodeAs[api.TriggerEventResult](t, a.body).RunID)

	r := s.rpcOne(t, `{"jsonrpc":"2.0","method":"trigger.send","params":{"triggerId":"orders","eventId":"evt-1","payload":{"order":1}},"id":1}`)
	require.Nil(t, r.Error)
	dup := decodeAs[api.TriggerEventResult](t, r.Result)
	require.True(t, dup.Duplicate)
	require.Equal(t, first.RunID, dup.RunID)

	subject, err := streams.TriggerSubject("orders")
	require.NoError(t, err)
	status, body, hdr := s.request(t, subject, operatorToken, []byte(`{"eventId":"evt-1","payload":{"order":1}}`))
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.Equal(t, "true", hdr.Get(gateway.HeaderDuplicate))
	require.Equal(t, first.RunID, decodeAs[api.TriggerEventResult](t, body).RunID)

	status, body, _ = s.request(t, subject, operatorToken, []byte(`{"payload":[1,2]}`))
	require.Equal(t, http.StatusCreated, status, "%s", body)
	assigned := decodeAs[api.TriggerEventResult](t, body)
	require.Len(t, assigned.EventID, 36, "an id given at ingress, returned to the sender")
	require.Equal(t, "orders:"+assigned.EventID, assigned.RunRequestID)
	require.Equal(t, 2, s.counts(t).requests, "two runs in all")

	sc := metricstest.Get(t, h)
	events := func(outcome, transport string) int64 {
		return sc.Count(t, "weft_gateway_trigger_events_total", map[string]string{"outcome": outcome, "transport": transport})
	}
	require.Equal(t, int64(1), events("accepted", "http"))
	require.Equal(t, int64(1), events("duplicate", "http"))
	require.Equal(t, int64(1), events("duplicate", "jsonrpc"))
	require.Equal(t, int64(1), events("duplicate", "nats"))
	require.Equal(t, int64(1), events("accepted", "nats"))
}

// TestTriggerEventBadInputEachTransport: each transport refuses in its own
// shape, and nothing is written.
func TestTriggerEventBadInputEachTransport(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true, Triggers: gateway.TriggerConfig{MaxPayloadBytes: 64}})
	s.createTrigger(t, "orders")
	before := s.counts(t)
	for _, tc := range []struct {
		name, trigger, body, code, field string
	}{
		{"eventId a number", "orders", `{"eventId":7}`, api.CodeInvalidArgument, "eventId"},
		{"eventId empty", "orders", `{"eventId":""}`, api.CodeInvalidArgument, "eventId"},
		{"eventId too long", "orders", `{"eventId":"` + strings.Repeat("e", 64) + `"}`, api.CodeInvalidArgument, "eventId"},
		{"payload over the limit", "orders", `{"payload":"` + strings.Repeat("p", 63) + `"}`, api.CodePayloadTooLarge, "payload"},
		{"unknown trigger", "nope", `{"eventId":"e"}`, api.CodeNotFound, ""},
	} {
		a := s.post(t, "/v1/triggers/"+tc.trigger+"/events", []byte(tc.body))
		e := a.errorBody(t)
		require.Equal(t, tc.code, e.Code, "REST %s: %s", tc.name, a.body)
		if tc.field != "" {
			require.Equal(t, tc.field, e.Details["field"], "REST %s", tc.name)
		}

		params := strings.Replace(tc.body, "{", fmt.Sprintf(`{"triggerId":%q,`, tc.trigger), 1)
		r := s.rpcOne(t, `{"jsonrpc":"2.0","method":"trigger.send","params":`+params+`,"id":1}`)
		require.NotNil(t, r.Error, "JSON-RPC %s", tc.name)
		require.Equal(t, tc.code, r.Error.Data.Code, "JSON-RPC %s", tc.name)
		if tc.code == api.CodeNotFound {
			require.Equal(t, jsonrpc.CodeNotFound, r.Error.Code)
		} else {
			require.Equal(t, jsonrpc.CodeInvalidParams, r.Error.Code)
		}

		subject, err := streams.TriggerSubject(tc.trigger)
		require.NoError(t, err)
		status, body, _ := s.request(t, subject, operatorToken, []byte(tc.body))
		require.Equal(t, a.status, status, "NATS %s answers the REST status: %s", tc.name, body)
		require.Equal(t, tc.code, decodeAs[api.ErrorBody](t, body).Error.Code, "NATS %s", tc.name)
	}
	status, _, _ := s.request(t, streams.TriggerSubjectPrefix+".orders.x", operatorToken, []byte(`{}`))
	require.Equal(t, http.StatusBadRequest, status, "a trigger id is one token")
	status, _, _ = s.request(t, streams.TriggerSubjectPrefix+".orders", "", []byte(`{}`))
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, before, s.counts(t), "nothing was written")
}

// TestTriggerREST: create, read, list and delete over REST and JSON-RPC.
func TestTriggerREST(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	s.createTrigger(t, "orders")
	a, err := s.do(t, http.MethodGet, "/v1/triggers/orders", viewerToken, nil)
	require.NoError(t, err)
	require.Equal(t, "hello", decodeAs[api.Trigger](t, a.body).PlanID)
	a = s.post(t, "/v1/triggers", map[string]any{"triggerId": "orders", "tenantId": "acme", "projectId": "other",
		"environmentId": "dev", "plan": json.RawMessage(planDoc)})
	require.Equal(t, http.StatusConflict, a.status)
	a = s.post(t, "/v1/triggers", map[string]any{"tenantId": "acme", "projectId": "p", "environmentId": "dev"})
	require.Equal(t, "plan", a.errorBody(t).Details["field"], "missing plan")

	r := s.rpcOne(t, `{"jsonrpc":"2.0","method":"trigger.list","params":{},"id":1}`)
	require.Len(t, decodeAs[api.TriggerList](t, r.Result).Triggers, 1)
	r = s.rpcOne(t, `{"jsonrpc":"2.0","method":"trigger.delete","params":{"triggerId":"orders"},"id":1}`)
	require.Nil(t, r.Error)
	a, err = s.do(t, http.MethodDelete, "/v1/triggers/orders", operatorToken, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, a.status)
}

// TestClientAgainstTheGateway: pkg/client's schedule and trigger calls
// against the real gateway.
func TestClientAgainstTheGateway(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	c, err := client.New(s.base, client.WithToken(operatorToken))
	require.NoError(t, err)
	ctx := t.Context()
	sch, err := c.CreateSchedule(ctx, api.ScheduleRequest{TenantID: "acme", ProjectID: "p", EnvironmentID: "dev",
		Cron: "0 9 * * MON-FRI", Timezone: "America/New_York", Plan: json.RawMessage(planDoc),
		MisfirePolicy: api.MisfireCompress, OverlapPolicy: api.OverlapCancelPrevious})
	require.NoError(t, err)
	require.Len(t, sch.ScheduleID, 36)
	paused, err := c.PauseSchedule(ctx, sch.ScheduleID)
	require.NoError(t, err)
	require.True(t, paused.Paused)
	list, err := c.ListSchedules(ctx, client.Page{})
	require.NoError(t, err)
	require.Len(t, list.Schedules, 1)
	require.NoError(t, c.DeleteSchedule(ctx, sch.ScheduleID))
	_, err = c.GetSchedule(ctx, sch.ScheduleID)
	require.True(t, client.IsCode(err, api.CodeNotFound))

	tr, err := c.CreateTrigger(ctx, api.TriggerRequest{TriggerID: "orders", TenantID: "acme", ProjectID: "p",
		EnvironmentID: "dev", Plan: json.RawMessage(planDoc)})
	require.NoError(t, err)
	first, err := c.SendTriggerEvent(ctx, tr.TriggerID, api.TriggerEvent{EventID: "e-1"})
	require.NoError(t, err)
	again, err := c.SendTriggerEvent(ctx, tr.TriggerID, api.TriggerEvent{EventID: "e-1"})
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Equal(t, first.RunID, again.RunID)
}

// TestTriggerInputExpressionEachTransport: a trigger whose input
// expression does not compile is refused at create with the field's path
// and the column, as a plan's expressions are, over REST and JSON-RPC; an
// event it fails on is refused on each transport, with nothing written.
func TestTriggerInputExpressionEachTransport(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	body := map[string]any{"triggerId": "orders", "tenantId": "acme", "projectId": "p", "environmentId": "dev",
		"plan": json.RawMessage(planDoc), "input": "${{ event.payload. }}"}
	a := s.post(t, "/v1/triggers", body)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	e := a.errorBody(t)
	require.Equal(t, "input", e.Details["field"])
	problems, _ := json.Marshal(e.Details["problems"])
	require.JSONEq(t, `[{"path": "input", "code": "INVALID_EXPRESSION",
		"message": "column 15: Syntax error: no viable alternative at input '.'"}]`, string(problems))
	params, err := json.Marshal(body)
	require.NoError(t, err)
	r := s.rpcOne(t, `{"jsonrpc":"2.0","method":"trigger.create","params":`+string(params)+`,"id":1}`)
	require.NotNil(t, r.Error)
	require.Equal(t, jsonrpc.CodeInvalidParams, r.Error.Code)
	problems, _ = json.Marshal(r.Error.Data.Details["problems"])
	require.Contains(t, string(problems), `"code":"INVALID_EXPRESSION"`)
	require.Zero(t, s.counts(t).requests)

	body["input"] = "event.payload.order"
	a = s.post(t, "/v1/triggers", body)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.Equal(t, "event.payload.order", decodeAs[api.Trigger](t, a.body).Input)
	before := s.counts(t)
	const event = `{"eventId":"evt-1","payload":{"shipment":1}}`
	a = s.post(t, "/v1/triggers/orders/events", []byte(event))
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	e = a.errorBody(t)
	require.Equal(t, "payload", e.Details["field"])
	require.Equal(t, "EXPRESSION_ERROR", e.Details["code"])
	require.Contains(t, e.Message, "no such key: order")
	r = s.rpcOne(t, `{"jsonrpc":"2.0","method":"trigger.send","params":{"triggerId":"orders",`+event[1:]+`,"id":1}`)
	require.NotNil(t, r.Error)
	require.Equal(t, "EXPRESSION_ERROR", r.Error.Data.Details["code"])
	subject, err := streams.TriggerSubject("orders")
	require.NoError(t, err)
	status, reply, _ := s.request(t, subject, operatorToken, []byte(event))
	require.Equal(t, http.StatusBadRequest, status, "%s", reply)
	require.Equal(t, before, s.counts(t), "a refused event writes nothing")

	a = s.post(t, "/v1/triggers/orders/events", []byte(`{"eventId":"evt-1","payload":{"order":{"id":7}}}`))
	require.Equal(t, http.StatusCreated, a.status, "the event id was not taken by the refusals: %s", a.body)
}
