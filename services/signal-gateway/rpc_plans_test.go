package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// rpcAs calls method with params on /rpc with token and returns the one
// response.
func (s *stack) rpcAs(t *testing.T, token, method string, params any) rpcResponse {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	require.NoError(t, err)
	a, err := s.do(t, http.MethodPost, "/rpc", token, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var r rpcResponse
	require.NoError(t, json.Unmarshal(a.body, &r), "%s", a.body)
	return r
}

// rpcResult calls method as the operator, requires a result and decodes
// it into a T.
func rpcResult[T any](t *testing.T, s *stack, method string, params any) T {
	t.Helper()
	r := s.rpcAs(t, operatorToken, method, params)
	require.Nil(t, r.Error, "%s: %+v", method, r.Error)
	return decodeAs[T](t, r.Result)
}

// TestRPCPlanPush: plan.push stores what POST /v1/plans stores, answers
// a repeat with the stored version, refuses another plan at the same
// version with the conflict code and PlanVersionConflict, and an invalid
// plan with the problems REST gives it.
func TestRPCPlanPush(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	created := rpcResult[api.PlanVersion](t, s, "plan.push", pushBody(versionDoc("1")))
	a := s.get(t, "/v1/plans/hello/versions/1?projectId=p", viewerToken)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Equal(t, decodeAs[api.PlanVersion](t, a.body), created, "the version REST reads")
	require.Equal(t, created, rpcResult[api.PlanVersion](t, s, "plan.push", pushBody(versionDoc("1"))), "a repeat")

	other := json.RawMessage(`{"planId":"hello","planVersion":"1","steps":[{"id":"a","activity":"other"}]}`)
	r := s.rpcAs(t, operatorToken, "plan.push", pushBody(other))
	require.NotNil(t, r.Error)
	require.Equal(t, -32009, r.Error.Code, "Weft's one conflict code")
	require.Equal(t, api.CodePlanVersionConflict, r.Error.Data.Code)
	require.Equal(t, created.Digest, r.Error.Data.Details["digest"])

	bad := pushBody(json.RawMessage(`{"planId":"hello","planVersion":"2","steps":[{"id":"a","activity":"echo","dependsOn":["nope"]}]}`))
	r = s.rpcAs(t, operatorToken, "plan.push", bad)
	require.NotNil(t, r.Error)
	require.Equal(t, -32602, r.Error.Code)
	require.Equal(t, api.CodeInvalidArgument, r.Error.Data.Code)
	a = s.post(t, "/v1/plans", bad)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	require.Equal(t, a.errorBody(t).Details["problems"], r.Error.Data.Details["problems"], "the problems REST gives")

	r = s.rpcAs(t, viewerToken, "plan.push", pushBody(versionDoc("3")))
	require.NotNil(t, r.Error)
	require.Equal(t, -32003, r.Error.Code, "a viewer may not push")
	r = s.rpcAs(t, operatorToken, "plan.push", map[string]any{"projectId": "p", "plan": versionDoc("3"), "extra": 1})
	require.NotNil(t, r.Error)
	require.Equal(t, -32602, r.Error.Code, "params are decoded strictly")
	require.Equal(t, 1, s.rows(t, "plan_versions", ""), "nothing of the refusals is stored")
}

// TestRPCPlanReads: plan.list pages newest first without plans, plan.get
// and plan.getVersion answer what REST answers, plan.archive and
// plan.restore move latest; the refusals are those of REST, in the
// JSON-RPC shape.
func TestRPCPlanReads(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	for _, v := range []string{"1", "2", "3"} {
		s.push(t, versionDoc(v), http.StatusCreated)
	}
	var seen []string
	params := map[string]any{"projectId": "p", "limit": 2}
	for range 3 {
		l := rpcResult[api.PlanVersionList](t, s, "plan.list", params)
		for _, v := range l.Versions {
			require.Nil(t, v.Plan, "a list leaves the plans out")
			seen = append(seen, v.PlanVersion)
		}
		if l.NextCursor == "" {
			break
		}
		params["cursor"] = l.NextCursor
	}
	require.Equal(t, []string{"3", "2", "1"}, seen)

	plan := func() api.Plan {
		return rpcResult[api.Plan](t, s, "plan.get", map[string]any{"projectId": "p", "planId": "hello"})
	}
	got := plan()
	a := s.get(t, "/v1/plans/hello?projectId=p", viewerToken)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Equal(t, decodeAs[api.Plan](t, a.body), got)
	require.Equal(t, "3", got.Latest)

	v2 := map[string]any{"projectId": "p", "planId": "hello", "planVersion": "2"}
	version := rpcResult[api.PlanVersion](t, s, "plan.getVersion", v2)
	a = s.get(t, "/v1/plans/hello/versions/2?projectId=p", viewerToken)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Equal(t, decodeAs[api.PlanVersion](t, a.body), version)
	require.NotEmpty(t, version.Plan)

	v3 := map[string]any{"projectId": "p", "planId": "hello", "planVersion": "3"}
	require.NotNil(t, rpcResult[api.PlanVersion](t, s, "plan.archive", v3).ArchivedAt)
	require.Equal(t, "2", plan().Latest, "latest passes over an archived version")
	require.Nil(t, rpcResult[api.PlanVersion](t, s, "plan.restore", v3).ArchivedAt)
	require.Equal(t, "3", plan().Latest)

	for name, tc := range map[string]struct {
		token, method string
		params        map[string]any
		code          int
		weft          string
	}{
		"no project":         {viewerToken, "plan.get", map[string]any{"planId": "hello"}, -32602, api.CodeInvalidArgument},
		"no version":         {viewerToken, "plan.getVersion", map[string]any{"projectId": "p", "planId": "hello"}, -32602, api.CodeInvalidArgument},
		"unknown member":     {viewerToken, "plan.get", map[string]any{"projectId": "p", "planId": "hello", "version": "1"}, -32602, api.CodeInvalidArgument},
		"limit too large":    {viewerToken, "plan.list", map[string]any{"limit": 100000}, -32602, api.CodeInvalidArgument},
		"unknown version":    {viewerToken, "plan.getVersion", map[string]any{"projectId": "p", "planId": "hello", "planVersion": "9"}, -32004, api.CodeNotFound},
		"another project":    {viewerToken, "plan.get", map[string]any{"projectId": "q", "planId": "hello"}, -32004, api.CodeNotFound},
		"another tenant":     {strangerToken, "plan.get", map[string]any{"projectId": "p", "planId": "hello"}, -32004, api.CodeNotFound},
		"another's archive":  {strangerToken, "plan.archive", v2, -32004, api.CodeNotFound},
		"a viewer's archive": {viewerToken, "plan.archive", v2, -32003, api.CodePermissionDenied},
		"a viewer's restore": {viewerToken, "plan.restore", v2, -32003, api.CodePermissionDenied},
	} {
		r := s.rpcAs(t, tc.token, tc.method, tc.params)
		require.NotNil(t, r.Error, name)
		require.Equal(t, tc.code, r.Error.Code, name)
		require.Equal(t, tc.weft, r.Error.Data.Code, name)
	}
	r := s.rpcAs(t, viewerToken, "plan.getVersion", map[string]any{})
	require.NotNil(t, r.Error)
	for _, field := range []string{"projectId", "planId", "planVersion"} {
		require.Contains(t, r.Error.Message, field, "each missing name is listed")
	}
	require.Nil(t, rpcResult[api.PlanVersion](t, s, "plan.getVersion", v2).ArchivedAt, "no refusal archived anything")
	r = s.rpcAs(t, strangerToken, "plan.list", map[string]any{})
	require.Nil(t, r.Error)
	require.Empty(t, decodeAs[api.PlanVersionList](t, r.Result).Versions, "another tenant lists none of it")
}
