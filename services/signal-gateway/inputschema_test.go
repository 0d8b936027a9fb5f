package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/plan"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// typedPlanDoc is planDoc with an input schema: an object with a number
// total of at least 0 and an optional string customer. It allows the
// keys a schedule's fire adds.
const typedPlanDoc = `{"planId":"typed","planVersion":"1","inputSchema":{"type":"object","required":["total"],` +
	`"additionalProperties":false,"properties":{"total":{"type":"number","minimum":0},"customer":{"type":"string"},` +
	`"scheduledFor":{"type":"string"},"schedule":{"type":"object"}}},` +
	`"steps":[{"id":"a","activity":"echo"},{"id":"w","kind":"waitSignal","signal":"go","dependsOn":["a"]}]}`

// badTypedInputProblems are the problems of the input {"total":-1,
// "customer":7,"extra":true} against typedPlanDoc's schema.
var badTypedInputProblems = []api.Problem{
	{Path: "input.customer", Code: plan.CodeInputMismatch, Keyword: "type", Message: "type: got number, want string"},
	{Path: "input.extra", Code: plan.CodeInputMismatch, Keyword: "additionalProperties", Message: "additionalProperties: property is not allowed"},
	{Path: "input.total", Code: plan.CodeInputMismatch, Keyword: "minimum", Message: "minimum: got -1, want 0"},
}

// A start whose input does not fit its plan's input schema is refused on
// every transport with every problem, each at its path in the input and with the keyword it breaks, and
// nothing is written; the same start with an input that fits starts.
func TestStartRefusesAnInputThatBreaksTheSchema(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	start := func(input string) string {
		return `{"tenantId":"acme","projectId":"p","environmentId":"dev","planId":"typed","planVersion":"1",` +
			`"runRequestId":"typed-1","plan":` + typedPlanDoc + `,"input":` + input + `}`
	}
	wantStatus := map[string]int{"REST": http.StatusBadRequest, "JSON-RPC": jsonrpc.CodeInvalidParams, "NATS": http.StatusBadRequest}
	for _, r := range startRefusals(t, s, start(`{"total":-1,"customer":7,"extra":true}`)) {
		require.Equal(t, wantStatus[r.transport], r.status, r.transport)
		require.Equal(t, api.CodeInvalidArgument, r.err.Code, r.transport)
		require.Equal(t, badTypedInputProblems, problemsOf(t, r.err), r.transport)
		require.Equal(t, "input", r.err.Details["field"], r.transport)
		require.Contains(t, r.err.Message, "3 problems: input.customer type: got number, want string", r.transport)
	}
	for _, r := range startRefusals(t, s, start(`null`)) {
		require.Equal(t, []api.Problem{{Path: "input", Code: plan.CodeInputMismatch, Keyword: "type", Message: "type: got null, want object"}},
			problemsOf(t, r.err), "%s: an absent input is null", r.transport)
	}
	require.Zero(t, s.counts(t), "a refused start writes nothing")

	a := s.post(t, "/v1/runs", []byte(start(`{"total":12.5}`)))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
}

// A plan whose input schema is outside the subset is refused as any
// plan problem is, at its path in the request.
func TestStartRefusesASchemaOutsideTheSubset(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	body := `{"tenantId":"acme","projectId":"p","environmentId":"dev","planId":"x","planVersion":"1","runRequestId":"r",` +
		`"plan":{"planId":"x","planVersion":"1","inputSchema":{"properties":{"a":{"$ref":"https://example.com/s.json"}}},` +
		`"steps":[{"id":"a","activity":"echo"}]}}`
	for _, r := range startRefusals(t, s, body) {
		ps := problemsOf(t, r.err)
		require.Len(t, ps, 1, "%s: %+v", r.transport, ps)
		require.Equal(t, `plan.inputSchema.properties.a["$ref"]`, ps[0].Path, r.transport)
		require.Equal(t, plan.CodeInvalidInputSchema, ps[0].Code, r.transport)
	}
	require.Zero(t, s.counts(t))
}

// A schedule's input, with what each fire adds, is checked against the
// schema at create and at update; nothing is stored for a refusal.
func TestScheduleInputIsCheckedAgainstTheSchema(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	bad := scheduleBody("typed", "plan", json.RawMessage(typedPlanDoc), "input", map[string]any{"total": -1, "customer": 7, "extra": true})
	a := s.post(t, "/v1/schedules", bad)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	require.Equal(t, badTypedInputProblems, problemsOf(t, a.errorBody(t)))

	r := s.rpcOne(t, `{"jsonrpc":"2.0","method":"schedule.create","params":`+string(mustJSON(t, bad))+`,"id":1}`)
	require.NotNil(t, r.Error)
	require.Equal(t, badTypedInputProblems, problemsOf(t, r.Error.Data))
	var stored int
	require.NoError(t, s.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM schedules`).Scan(&stored))
	require.Zero(t, stored)

	good := scheduleBody("typed", "plan", json.RawMessage(typedPlanDoc), "input", map[string]any{"total": 1})
	a = s.post(t, "/v1/schedules", good)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	a, err := s.do(t, http.MethodPut, "/v1/schedules/typed", operatorToken, mustJSON(t, bad))
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	require.Equal(t, badTypedInputProblems, problemsOf(t, a.errorBody(t)))
}

// A trigger of a plan with a schema is created without an input to
// check; each event's payload, the run's input, is checked at send and
// refused with the start's problems, starting nothing.
func TestTriggerEventIsCheckedAgainstTheSchema(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	a := s.post(t, "/v1/triggers", map[string]any{"triggerId": "typed", "tenantId": "acme", "projectId": "p",
		"environmentId": "dev", "plan": json.RawMessage(typedPlanDoc)})
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)

	a = s.post(t, "/v1/triggers/typed/events", map[string]any{"eventId": "e1", "payload": map[string]any{"total": -1, "customer": 7, "extra": true}})
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	require.Equal(t, badTypedInputProblems, problemsOf(t, a.errorBody(t)))
	r := s.rpcOne(t, `{"jsonrpc":"2.0","method":"trigger.send","params":{"triggerId":"typed","eventId":"e1"},"id":1}`)
	require.NotNil(t, r.Error)
	require.Equal(t, []api.Problem{{Path: "input", Code: plan.CodeInputMismatch, Keyword: "type", Message: "type: got null, want object"}},
		problemsOf(t, r.Error.Data), "an event without a payload starts a run whose input is null")
	require.Zero(t, s.counts(t), "a refused event starts nothing")

	a = s.post(t, "/v1/triggers/typed/events", map[string]any{"eventId": "e1", "payload": map[string]any{"total": 3}})
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
}
