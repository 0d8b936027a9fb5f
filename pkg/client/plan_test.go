package client_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

// TestPushPlanCreated: created is true for a 201, false for a 200 (a
// repeat), and the request carries the push.
func TestPushPlanCreated(t *testing.T) {
	t.Parallel()
	stored := api.PlanVersion{ProjectID: "p", PlanID: "hello", PlanVersion: "1", Digest: "sha256:ab"}
	b := setup(t, []answer{jsonAnswer(t, http.StatusCreated, stored), jsonAnswer(t, http.StatusOK, stored)})
	req := api.PlanPushRequest{ProjectID: "p", Plan: json.RawMessage(`{"planId":"hello","planVersion":"1"}`)}
	for _, want := range []bool{true, false} {
		v, created, err := b.client.PushPlan(t.Context(), req)
		require.NoError(t, err)
		require.Equal(t, want, created)
		require.Equal(t, stored, *v)
	}
	reqs := b.gw.requests()
	require.Len(t, reqs, 2)
	require.Equal(t, "POST /v1/plans", reqs[0].method+" "+reqs[0].escapedPath)
	require.Equal(t, "p", reqs[0].body["projectId"])
	require.Equal(t, map[string]any{"planId": "hello", "planVersion": "1"}, reqs[0].body["plan"])
}

// TestPushPlanCreatedAfterRetry: created is the answer of the attempt
// that succeeded.
func TestPushPlanCreatedAfterRetry(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{
		errAnswer(t, http.StatusServiceUnavailable, api.CodeUnavailable, "shutting down", nil),
		jsonAnswer(t, http.StatusCreated, api.PlanVersion{PlanID: "hello"}),
	})
	_, created, err := b.client.PushPlan(t.Context(), api.PlanPushRequest{ProjectID: "p"})
	require.NoError(t, err)
	require.True(t, created)
	require.Len(t, b.gw.requests(), 2)
}

// TestPushPlanConflict: a conflict is an *Error with its code and
// details, and no result.
func TestPushPlanConflict(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{errAnswer(t, http.StatusConflict, api.CodePlanVersionConflict, "stored with another plan",
		map[string]any{"digest": "sha256:cd"})})
	v, created, err := b.client.PushPlan(t.Context(), api.PlanPushRequest{ProjectID: "p"})
	require.Nil(t, v)
	require.False(t, created)
	require.True(t, client.IsCode(err, api.CodePlanVersionConflict))
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "sha256:cd", e.Details["digest"])
	require.Len(t, b.gw.requests(), 1, "a conflict is not retried")
}

// TestPlanCalls: each call's method, escaped path and query.
func TestPlanCalls(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{jsonAnswer(t, http.StatusOK, map[string]any{})})
	ctx := t.Context()
	_, err := b.client.ListPlans(ctx, client.PlanFilter{})
	require.NoError(t, err)
	_, err = b.client.ListPlans(ctx, client.PlanFilter{ProjectID: "a b", Page: client.Page{Limit: 5, Cursor: "c"}})
	require.NoError(t, err)
	_, err = b.client.GetPlan(ctx, "p", "my plan", client.Page{})
	require.NoError(t, err)
	_, err = b.client.GetPlan(ctx, "p", "hello", client.Page{Limit: 5, Cursor: "c"})
	require.NoError(t, err)
	_, err = b.client.GetPlanVersion(ctx, "p", "hello", "1/2")
	require.NoError(t, err)
	_, err = b.client.ArchivePlanVersion(ctx, "p", "hello", "1")
	require.NoError(t, err)
	_, err = b.client.RestorePlanVersion(ctx, "p&q", "hello", "1")
	require.NoError(t, err)

	var got []string
	for _, r := range b.gw.requests() {
		got = append(got, r.method+" "+r.escapedPath)
	}
	require.Equal(t, []string{
		"GET /v1/plans", "GET /v1/plans", "GET /v1/plans/my%20plan", "GET /v1/plans/hello", "GET /v1/plans/hello/versions/1%2F2",
		"POST /v1/plans/hello/versions/1/archive", "POST /v1/plans/hello/versions/1/restore",
	}, got)
	reqs := b.gw.requests()
	require.Empty(t, reqs[0].query)
	require.Equal(t, "cursor=c&limit=5&projectId=a+b", reqs[1].query)
	require.Equal(t, "projectId=p", reqs[2].query)
	require.Equal(t, "cursor=c&limit=5&projectId=p", reqs[3].query, "a plan's versions page as a list does")
	require.Equal(t, "projectId=p", reqs[4].query)
	require.Equal(t, "projectId=p%26q", reqs[6].query)
	require.Nil(t, reqs[5].body, "archive sends no body")
}

// TestPlanCallsRefused: a call missing its project, or naming a plan or
// version a URL would resolve away, is refused before anything is sent.
func TestPlanCallsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{jsonAnswer(t, http.StatusOK, map[string]any{})})
	ctx := t.Context()
	_, err := b.client.GetPlan(ctx, "", "hello", client.Page{})
	require.ErrorIs(t, err, client.ErrInvalidRequest)
	_, err = b.client.GetPlan(ctx, "p", "..", client.Page{})
	require.ErrorIs(t, err, client.ErrInvalidRequest)
	_, err = b.client.GetPlanVersion(ctx, "p", "hello", "")
	require.ErrorIs(t, err, client.ErrInvalidRequest)
	_, err = b.client.ArchivePlanVersion(ctx, "", "hello", "1")
	require.ErrorIs(t, err, client.ErrInvalidRequest)
	require.Empty(t, b.gw.requests())
}

// TestStartRunByPlanRef: a start naming a registered version sends the
// planRef and no plan; an archived version's refusal keeps its code.
func TestStartRunByPlanRef(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{errAnswer(t, http.StatusConflict, api.CodePlanArchived, "archived",
		map[string]any{"planId": "hello", "planVersion": "1"})})
	req := api.StartRunRequest{TenantID: "t", ProjectID: "p", EnvironmentID: "e",
		PlanRef: &api.PlanRef{PlanID: "hello", PlanVersion: api.PlanVersionLatest}}
	res, err := b.client.StartRun(t.Context(), req)
	require.Nil(t, res)
	require.True(t, client.IsCode(err, api.CodePlanArchived))
	body := b.gw.requests()[0].body
	require.Equal(t, map[string]any{"planId": "hello", "planVersion": "latest"}, body["planRef"])
	require.NotContains(t, body, "plan")
}
