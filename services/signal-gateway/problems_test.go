package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/streams"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// refusal is one transport's refusal of a start: its status (HTTP, or the
// NATS Weft-Status; the JSON-RPC error code for JSON-RPC) and its Weft
// error.
type refusal struct {
	transport string
	status    int
	err       api.Error
}

// startRefusals sends the start body on REST, JSON-RPC and NATS as the
// operator and returns the three refusals.
func startRefusals(t *testing.T, s *stack, body string) []refusal {
	t.Helper()
	a := s.post(t, "/v1/runs", []byte(body))
	rest := refusal{transport: "REST", status: a.status, err: a.errorBody(t)}

	r := s.rpcOne(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"run.start","params":%s,"id":1}`, body))
	require.NotNil(t, r.Error, "JSON-RPC answered a result")
	rpc := refusal{transport: "JSON-RPC", status: r.Error.Code, err: r.Error.Data}

	status, reply, _ := s.request(t, streams.RunStartSubject, operatorToken, []byte(body))
	var b api.ErrorBody
	require.NoError(t, json.Unmarshal(reply, &b), "%s", reply)
	return []refusal{rest, rpc, {transport: "NATS", status: status, err: b.Error}}
}

// problemsOf reads details.problems of a Weft error.
func problemsOf(t *testing.T, e api.Error) []api.Problem {
	t.Helper()
	raw, err := json.Marshal(e.Details["problems"])
	require.NoError(t, err)
	var ps []api.Problem
	require.NoError(t, json.Unmarshal(raw, &ps), "%s", raw)
	return ps
}

// Issue 19, item 9: a start missing several fields is told of every one
// of them, on every transport, each in its own shape (REST 400, JSON-RPC
// -32602 with the Weft error as data, NATS Weft-Status 400), and nothing
// is written.
func TestStartReportsEveryMissingField(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	body := `{"environmentId":"dev","runRequestId":"several","plan":` + planDoc + `}`
	want := []api.Problem{
		{Path: "tenantId", Code: api.ProblemMissing, Message: "must not be empty"},
		{Path: "projectId", Code: api.ProblemMissing, Message: "must not be empty"},
		{Path: "planId", Code: api.ProblemMissing, Message: `must not be empty: it is the plan's own, "hello"`},
		{Path: "planVersion", Code: api.ProblemMissing, Message: `must not be empty: it is the plan's own, "1"`},
	}
	wantStatus := map[string]int{"REST": http.StatusBadRequest, "JSON-RPC": jsonrpc.CodeInvalidParams, "NATS": http.StatusBadRequest}
	for _, r := range startRefusals(t, s, body) {
		require.Equal(t, wantStatus[r.transport], r.status, r.transport)
		require.Equal(t, api.CodeInvalidArgument, r.err.Code, r.transport)
		require.Equal(t, want, problemsOf(t, r.err), r.transport)
		require.Equal(t, "tenantId", r.err.Details["field"], "%s: the first problem's field", r.transport)
		require.Equal(t, `4 problems: tenantId must not be empty; projectId must not be empty; `+
			`planId must not be empty: it is the plan's own, "hello"; planVersion must not be empty: it is the plan's own, "1"`, r.err.Message, r.transport)
	}
	require.Zero(t, s.counts(t), "a refused start writes nothing")
}

// A field that breaks its rule and a plan with problems are reported
// together: the plan's problems follow the request's own, with their
// paths in the request body.
func TestStartReportsFieldAndPlanProblemsTogether(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	body := `{"tenantId":"acme","projectId":"a b","environmentId":"dev","planId":"hello","planVersion":"1",` +
		`"plan":{"planId":"hello","planVersion":"1","steps":[{"id":"a","activity":"echo","dependsOn":["zz"]}]}}`
	for _, r := range startRefusals(t, s, body) {
		require.Equal(t, api.CodeInvalidArgument, r.err.Code, r.transport)
		ps := problemsOf(t, r.err)
		require.Len(t, ps, 2, "%s: %+v", r.transport, ps)
		require.Equal(t, "projectId", ps[0].Path, r.transport)
		require.Equal(t, api.ProblemInvalid, ps[0].Code, r.transport)
		require.Equal(t, "plan.steps[id=a].dependsOn", ps[1].Path, r.transport)
		require.Equal(t, "a", ps[1].StepID, r.transport)
	}
	require.Zero(t, s.counts(t))
}

// Issue 19, item 9: a start naming a tenant that is not the key's is
// refused 403 with a message and details that name the key's tenant, on
// every transport.
func TestTenantMismatchNamesTheKeysTenant(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	start := startBody("mismatch")
	start["tenantId"] = "globex"
	body, err := json.Marshal(start)
	require.NoError(t, err)
	wantStatus := map[string]int{"REST": http.StatusForbidden, "JSON-RPC": jsonrpc.CodePermissionDenied, "NATS": http.StatusForbidden}
	for _, r := range startRefusals(t, s, string(body)) {
		require.Equal(t, wantStatus[r.transport], r.status, r.transport)
		require.Equal(t, api.CodePermissionDenied, r.err.Code, r.transport)
		require.Equal(t, `tenant mismatch: the API key "op" acts in tenant "acme", and the request names tenant "globex"`, r.err.Message, r.transport)
		require.Equal(t, map[string]any{"tenantId": "globex", "keyTenantId": "acme", "keyId": "op"}, r.err.Details, r.transport)
	}
	require.Zero(t, s.counts(t))
}

// The schedules and triggers a key creates name their tenant too, and are
// refused in the same words.
func TestTenantMismatchOfSchedulesAndTriggers(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	for path, body := range map[string]string{
		"/v1/schedules": `{"scheduleId":"n","tenantId":"globex","projectId":"p","environmentId":"dev","cron":"0 * * * *","plan":` + planDoc + `}`,
		"/v1/triggers":  `{"triggerId":"t","tenantId":"globex","projectId":"p","environmentId":"dev","plan":` + planDoc + `}`,
	} {
		a := s.post(t, path, []byte(body))
		require.Equal(t, http.StatusForbidden, a.status, "%s: %s", path, a.body)
		e := a.errorBody(t)
		require.Equal(t, "acme", e.Details["keyTenantId"], path)
		require.Contains(t, e.Message, `acts in tenant "acme"`, path)
	}
}

// Issue 19, item 9: a signal with several fields at fault is told of each,
// on every transport in its own shape; JSON-RPC, which names the run in
// its params, reports the missing runId too. Nothing is written.
func TestSignalReportsEveryFieldAtFault(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.run(t)
	before := s.counts(t)
	body := `{"signalId":""}`
	name := api.Problem{Path: "signalName", Code: api.ProblemMissing, Message: "must not be empty"}
	id := api.Problem{Path: "signalId", Code: api.ProblemInvalid, Message: "must not be empty; leave it out to have one generated"}

	a := s.post(t, "/v1/runs/"+runID+"/signals", []byte(body))
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	require.Equal(t, []api.Problem{name, id}, problemsOf(t, a.errorBody(t)))

	r := s.rpcOne(t, `{"jsonrpc":"2.0","method":"signal.send","params":`+body+`,"id":1}`)
	require.NotNil(t, r.Error)
	require.Equal(t, jsonrpc.CodeInvalidParams, r.Error.Code)
	// Params naming no run are told of runId (workflowId is its tier-0 name).
	run := api.Problem{Path: "runId", Code: api.ProblemMissing, Message: `must be a run id (a UUID in canonical, lowercase form), not ""`}
	require.Equal(t, []api.Problem{run, name, id}, problemsOf(t, r.Error.Data))
	require.Equal(t, "runId", r.Error.Data.Details["field"])

	subject, err := streams.SignalSubject(runID)
	require.NoError(t, err)
	status, reply, _ := s.request(t, subject, operatorToken, []byte(body))
	require.Equal(t, http.StatusBadRequest, status, "%s", reply)
	var b api.ErrorBody
	require.NoError(t, json.Unmarshal(reply, &b), "%s", reply)
	require.Equal(t, []api.Problem{name, id}, problemsOf(t, b.Error))

	require.Equal(t, before, s.counts(t), "a refused signal writes nothing")
}

// Issue 19, item 9: a schedule or trigger with several fields at fault is
// told of each, over REST and JSON-RPC, and nothing is stored.
func TestScheduleAndTriggerReportEveryFieldAtFault(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	paths := func(ps []api.Problem) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = p.Path
		}
		return out
	}
	for _, tc := range []struct {
		path, method, body string
		want               []string
	}{
		{"/v1/schedules", "schedule.create", `{"scheduleId":"a b","tenantId":"acme","projectId":"p","environmentId":"dev","misfirePolicy":"never"}`,
			[]string{"scheduleId", "cron", "misfirePolicy", "plan"}},
		{"/v1/schedules", "schedule.create", `{"scheduleId":"n","environmentId":"dev","cron":"0 * * * *"}`,
			[]string{"tenantId", "projectId", "plan"}},
		{"/v1/schedules", "schedule.create", `{"scheduleId":"n","projectId":"p","environmentId":"dev","cron":"0 * * * *","overlapPolicy":"x","plan":` + planDoc + `}`,
			[]string{"overlapPolicy", "tenantId"}},
		{"/v1/triggers", "trigger.create", `{"triggerId":"a b","tenantId":"acme","projectId":"p","environmentId":"dev","input":"event.","plan":` + planDoc + `}`,
			[]string{"triggerId", "input"}},
		{"/v1/triggers", "trigger.create", `{"triggerId":"t","tenantId":"acme","environmentId":"dev"}`,
			[]string{"projectId", "plan"}},
	} {
		a := s.post(t, tc.path, []byte(tc.body))
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", tc.body, a.body)
		e := a.errorBody(t)
		require.Equal(t, api.CodeInvalidArgument, e.Code)
		require.Equal(t, tc.want, paths(problemsOf(t, e)), "REST %s", tc.body)
		require.Equal(t, tc.want[0], e.Details["field"])

		r := s.rpcOne(t, `{"jsonrpc":"2.0","method":"`+tc.method+`","params":`+tc.body+`,"id":1}`)
		require.NotNil(t, r.Error, tc.body)
		require.Equal(t, jsonrpc.CodeInvalidParams, r.Error.Code)
		require.Equal(t, tc.want, paths(problemsOf(t, r.Error.Data)), "JSON-RPC %s", tc.body)
	}
	var stored int
	require.NoError(t, s.db.Pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM schedules) + (SELECT count(*) FROM triggers)`).Scan(&stored))
	require.Zero(t, stored)
}
