package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// versionDoc is planDoc at version v.
func versionDoc(v string) json.RawMessage {
	return json.RawMessage(strings.Replace(planDoc, `"planVersion":"1"`, `"planVersion":"`+v+`"`, 1))
}

func pushBody(doc json.RawMessage) map[string]any {
	return map[string]any{"projectId": "p", "plan": doc}
}

// push pushes doc as the operator and requires status.
func (s *stack) push(t *testing.T, doc json.RawMessage, status int) api.PlanVersion {
	t.Helper()
	a := s.post(t, "/v1/plans", pushBody(doc))
	require.Equal(t, status, a.status, "%s", a.body)
	return decodeAs[api.PlanVersion](t, a.body)
}

func (s *stack) get(t *testing.T, path, token string) answer {
	t.Helper()
	a, err := s.do(t, http.MethodGet, path, token, nil)
	require.NoError(t, err)
	return a
}

// approvedPlan is the plan the RunApproved of runID records.
func (s *stack) approvedPlan(t *testing.T, runID string) events.RunApprovedData {
	t.Helper()
	var raw []byte
	require.NoError(t, s.db.Pool.QueryRow(context.Background(),
		`SELECT event_data FROM run_events WHERE run_id = $1 AND event_type = 'RunApproved'`, runID).Scan(&raw))
	return decodeAs[events.RunApprovedData](t, raw)
}

// refStart is a start of acme's plan hello by planRef at version.
func refStart(requestID, version string) map[string]any {
	return map[string]any{"tenantId": "acme", "projectId": "p", "environmentId": "dev", "runRequestId": requestID,
		"planRef": map[string]any{"planId": "hello", "planVersion": version}, "input": map[string]any{"n": 1}}
}

// TestPlanPush: a push is stored (201), a repeat answers it (200), the
// same version with another plan is a conflict, and an invalid plan is
// refused with the problems a start gives it, storing nothing.
func TestPlanPush(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	created := s.push(t, versionDoc("1"), http.StatusCreated)
	require.Equal(t, api.PlanVersion{TenantID: "acme", ProjectID: "p", PlanID: "hello", PlanVersion: "1",
		Digest: created.Digest, CreatedAt: created.CreatedAt, Plan: created.Plan}, created)
	require.True(t, strings.HasPrefix(created.Digest, "sha256:"), created.Digest)
	a := s.get(t, "/v1/plans/hello/versions/1?projectId=p", viewerToken)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Equal(t, created, decodeAs[api.PlanVersion](t, a.body), "the version as stored")

	// The same plan, its keys in another order and with white space, is the same version.
	again := s.push(t, json.RawMessage(`{ "steps":[{"id":"a","activity":"echo"},{"id":"w","kind":"waitSignal","signal":"go","dependsOn":["a"]}],
		"planVersion":"1", "planId":"hello" }`), http.StatusOK)
	require.Equal(t, created, again)

	a = s.post(t, "/v1/plans", pushBody(json.RawMessage(`{"planId":"hello","planVersion":"1","steps":[{"id":"a","activity":"other"}]}`)))
	require.Equal(t, http.StatusConflict, a.status, "%s", a.body)
	e := a.errorBody(t)
	require.Equal(t, api.CodePlanVersionConflict, e.Code)
	require.Equal(t, created.Digest, e.Details["digest"])

	bad := json.RawMessage(`{"planId":"hello","planVersion":"2","steps":[{"id":"a","activity":"echo","dependsOn":["nope"]}]}`)
	a = s.post(t, "/v1/plans", pushBody(bad))
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	pushed := a.errorBody(t)
	start := startBody(events.NewRunID())
	start["plan"], start["planVersion"] = bad, "2"
	a = s.post(t, "/v1/runs", start)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	require.Equal(t, a.errorBody(t).Details["problems"], pushed.Details["problems"], "the problems a start gives")

	a = s.post(t, "/v1/plans", map[string]any{"plan": versionDoc("latest")})
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	require.Contains(t, string(a.body), "projectId")
	require.Contains(t, string(a.body), "plan.planVersion")
	a = s.post(t, "/v1/plans", map[string]any{"projectId": "p"})
	require.Equal(t, http.StatusBadRequest, a.status, "no plan: %s", a.body)
	require.Equal(t, 1, s.rows(t, "plan_versions", ""), "nothing of the refused pushes is stored")

	a, err := s.do(t, http.MethodPost, "/v1/plans", viewerToken, []byte(`{"projectId":"p","plan":`+planDoc+`}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, a.status, "a viewer may not push: %s", a.body)
	a, err = s.do(t, http.MethodPost, "/v1/plans", operatorToken, []byte(`{"tenantId":"globex","projectId":"p","plan":`+planDoc+`}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, a.status, "nor in another tenant: %s", a.body)
	require.Equal(t, 1, s.rows(t, "plan_versions", ""))
}

// TestPlanPushLimit: a push is held to the body limit of a start.
func TestPlanPushLimit(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true, MaxBodyBytes: 512})
	big := fmt.Sprintf(`{"planId":"hello","planVersion":"1","steps":[{"id":"a","activity":"%s"}]}`, strings.Repeat("x", 512))
	for _, path := range []string{"/v1/plans", "/v1/runs"} {
		a := s.post(t, path, pushBody(json.RawMessage(big)))
		require.Equal(t, http.StatusRequestEntityTooLarge, a.status, "%s: %s", path, a.body)
		require.Equal(t, api.CodePayloadTooLarge, a.errorBody(t).Code)
	}
	require.Equal(t, 0, s.rows(t, "plan_versions", ""))
}

// TestPlanReads: the list pages newest first, a plan lists its versions
// newest first with the latest not archived, and archive and restore
// move latest; another tenant sees none of it.
func TestPlanReads(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	for _, v := range []string{"1", "2", "3"} {
		s.push(t, versionDoc(v), http.StatusCreated)
	}
	var seen []string
	cursor := ""
	for range 3 {
		a := s.get(t, "/v1/plans?limit=2&projectId=p"+cursor, viewerToken)
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
		l := decodeAs[api.PlanVersionList](t, a.body)
		for _, v := range l.Versions {
			require.Nil(t, v.Plan, "a list leaves the plans out")
			seen = append(seen, v.PlanVersion)
		}
		if l.NextCursor == "" {
			break
		}
		cursor = "&cursor=" + l.NextCursor
	}
	require.Equal(t, []string{"3", "2", "1"}, seen)

	plan := func() api.Plan {
		a := s.get(t, "/v1/plans/hello?projectId=p", viewerToken)
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
		return decodeAs[api.Plan](t, a.body)
	}
	got := plan()
	require.Equal(t, "3", got.Latest)
	require.Len(t, got.Versions, 3)
	require.Equal(t, "3", got.Versions[0].PlanVersion)

	a := s.post(t, "/v1/plans/hello/versions/3/archive?projectId=p", []byte("{}"))
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.NotNil(t, decodeAs[api.PlanVersion](t, a.body).ArchivedAt)
	require.Equal(t, "2", plan().Latest, "latest passes over an archived version")
	a = s.post(t, "/v1/plans/hello/versions/3/restore?projectId=p", []byte("{}"))
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Nil(t, decodeAs[api.PlanVersion](t, a.body).ArchivedAt)
	require.Equal(t, "3", plan().Latest)

	a = s.get(t, "/v1/plans/hello/versions/2?projectId=p", viewerToken)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	v := decodeAs[api.PlanVersion](t, a.body)
	require.Equal(t, "2", v.PlanVersion)
	require.NotEmpty(t, v.Plan)

	for _, path := range []string{"/v1/plans/hello?projectId=p", "/v1/plans/hello/versions/2?projectId=p",
		"/v1/plans/hello/versions/9?projectId=p", "/v1/plans/hello?projectId=q"} {
		a = s.get(t, path, strangerToken)
		if strings.Contains(path, "projectId=q") {
			a = s.get(t, path, viewerToken)
		}
		require.Equal(t, http.StatusNotFound, a.status, "%s: %s", path, a.body)
		require.Equal(t, api.CodeNotFound, a.errorBody(t).Code)
	}
	a, err := s.do(t, http.MethodPost, "/v1/plans/hello/versions/2/archive?projectId=p", strangerToken, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, a.status, "another tenant's plan: %s", a.body)
	a = s.get(t, "/v1/plans", strangerToken)
	require.Empty(t, decodeAs[api.PlanVersionList](t, a.body).Versions)
	a = s.get(t, "/v1/plans/hello", viewerToken)
	require.Equal(t, http.StatusBadRequest, a.status, "projectId is required: %s", a.body)
	a, err = s.do(t, http.MethodPost, "/v1/plans/hello/versions/2/archive?projectId=p", viewerToken, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, a.status, "a viewer may not archive: %s", a.body)
}

// TestStartByPlanRef: a start may name a registered version instead of
// carrying its plan; its run records the full plan, "latest" resolves to
// the newest version not archived, an archived version is refused, and a
// repeat by ref is a duplicate.
func TestStartByPlanRef(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	v1 := s.push(t, versionDoc("1"), http.StatusCreated)
	s.push(t, versionDoc("2"), http.StatusCreated)

	id := events.NewRunID()
	a := s.post(t, "/v1/runs", refStart(id, "1"))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	first := decodeAs[api.StartRunResult](t, a.body)
	approved := s.approvedPlan(t, first.RunID)
	require.Equal(t, "hello", approved.PlanID)
	require.Equal(t, "1", approved.PlanVersion)
	require.JSONEq(t, string(v1.Plan), string(approved.Plan), "RunApproved holds the full plan")

	a = s.post(t, "/v1/runs", refStart(id, "1"))
	require.Equal(t, http.StatusOK, a.status, "a repeat by ref: %s", a.body)
	repeat := decodeAs[api.StartRunResult](t, a.body)
	require.True(t, repeat.Duplicate)
	require.Equal(t, first.RunID, repeat.RunID)
	withPlan := startBody(id) // the same request carrying the plan is the same start
	a = s.post(t, "/v1/runs", withPlan)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Equal(t, first.RunID, decodeAs[api.StartRunResult](t, a.body).RunID)

	a = s.post(t, "/v1/runs", refStart(events.NewRunID(), api.PlanVersionLatest))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.Equal(t, "2", s.approvedPlan(t, decodeAs[api.StartRunResult](t, a.body).RunID).PlanVersion)

	a = s.post(t, "/v1/plans/hello/versions/2/archive?projectId=p", []byte("{}"))
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	before := s.counts(t)
	a = s.post(t, "/v1/runs", refStart(events.NewRunID(), "2"))
	require.Equal(t, http.StatusConflict, a.status, "%s", a.body)
	require.Equal(t, api.CodePlanArchived, a.errorBody(t).Code)
	require.Equal(t, before, s.counts(t), "an archived version starts nothing")
	a = s.post(t, "/v1/runs", refStart(events.NewRunID(), api.PlanVersionLatest))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.Equal(t, "1", s.approvedPlan(t, decodeAs[api.StartRunResult](t, a.body).RunID).PlanVersion,
		"latest passes over the archived version")

	a = s.post(t, "/v1/plans/hello/versions/1/archive?projectId=p", []byte("{}"))
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	a = s.post(t, "/v1/runs", refStart(events.NewRunID(), api.PlanVersionLatest))
	require.Equal(t, http.StatusConflict, a.status, "every version archived: %s", a.body)
	require.Equal(t, api.CodePlanArchived, a.errorBody(t).Code)
	a = s.post(t, "/v1/plans/hello/versions/2/restore?projectId=p", []byte("{}"))
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	a = s.post(t, "/v1/runs", refStart(events.NewRunID(), "2"))
	require.Equal(t, http.StatusCreated, a.status, "a restored version starts again: %s", a.body)
}

// TestStartByPlanRefRefusals: a start with both plan and planRef, an
// incomplete planRef, a planVersion other than the resolved one, an
// unknown version, and a ref to another tenant's plan are refused and
// start nothing; JSON-RPC's run.start takes planRef too.
func TestStartByPlanRefRefusals(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	s.push(t, versionDoc("1"), http.StatusCreated)
	before := s.counts(t)

	both := refStart(events.NewRunID(), "1")
	both["plan"] = json.RawMessage(planDoc)
	empty := refStart(events.NewRunID(), "1")
	empty["planRef"] = map[string]any{"planId": "hello"}
	mismatch := refStart(events.NewRunID(), "1")
	mismatch["planVersion"] = "2"
	for name, tc := range map[string]struct {
		body   map[string]any
		status int
		code   string
		field  string
	}{
		"both":     {both, http.StatusBadRequest, api.CodeInvalidArgument, "planRef"},
		"empty":    {empty, http.StatusBadRequest, api.CodeInvalidArgument, "planRef.planVersion"},
		"mismatch": {mismatch, http.StatusBadRequest, api.CodeInvalidArgument, "planVersion"},
		"unknown":  {refStart(events.NewRunID(), "9"), http.StatusNotFound, api.CodeNotFound, ""},
	} {
		a := s.post(t, "/v1/runs", tc.body)
		require.Equal(t, tc.status, a.status, "%s: %s", name, a.body)
		e := a.errorBody(t)
		require.Equal(t, tc.code, e.Code, name)
		if tc.field != "" {
			require.Contains(t, e.Message, tc.field, name)
		}
	}
	body, err := json.Marshal(refStart(events.NewRunID(), "1"))
	require.NoError(t, err)
	body = []byte(strings.Replace(string(body), `"tenantId":"acme"`, `"tenantId":"globex"`, 1))
	a, err := s.do(t, http.MethodPost, "/v1/runs", strangerToken, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, a.status, "another tenant's plan is not found: %s", a.body)
	body = []byte(strings.Replace(string(body), `"tenantId":"globex"`, `"tenantId":"acme"`, 1))
	a, err = s.do(t, http.MethodPost, "/v1/runs", strangerToken, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, a.status, "nor started in its tenant: %s", a.body)
	require.Equal(t, before, s.counts(t), "no refusal writes anything")

	call, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "run.start",
		"params": refStart(events.NewRunID(), api.PlanVersionLatest)})
	require.NoError(t, err)
	a = s.post(t, "/rpc", call)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var resp struct {
		Result api.StartRunResult `json:"result"`
	}
	require.NoError(t, json.Unmarshal(a.body, &resp), "%s", a.body)
	require.NotEmpty(t, resp.Result.RunID, "%s", a.body)
	require.Equal(t, "1", s.approvedPlan(t, resp.Result.RunID).PlanVersion)
}
