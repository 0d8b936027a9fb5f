package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/streams"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// marshal is v as JSON.
func marshal(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return raw
}

// TestNATSPlanPush: weft.plans.push answers as POST /v1/plans, with its
// status in Weft-Status: 201 for a new version, 200 and the stored
// version for a repeat, 409 PlanVersionConflict for another plan at the
// version, and REST's refusals in the REST error shape.
func TestNATSPlanPush(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	status, body, _ := s.request(t, streams.PlanPushSubject, operatorToken, marshal(t, pushBody(versionDoc("1"))))
	require.Equal(t, http.StatusCreated, status, "%s", body)
	created := decodeAs[api.PlanVersion](t, body)
	a := s.get(t, "/v1/plans/hello/versions/1?projectId=p", viewerToken)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Equal(t, decodeAs[api.PlanVersion](t, a.body), created, "the version REST reads")

	status, body, _ = s.request(t, streams.PlanPushSubject, operatorToken, marshal(t, pushBody(versionDoc("1"))))
	require.Equal(t, http.StatusOK, status, "a repeat: %s", body)
	require.Equal(t, created, decodeAs[api.PlanVersion](t, body))

	other := json.RawMessage(`{"planId":"hello","planVersion":"1","steps":[{"id":"a","activity":"other"}]}`)
	status, body, _ = s.request(t, streams.PlanPushSubject, operatorToken, marshal(t, pushBody(other)))
	require.Equal(t, http.StatusConflict, status, "%s", body)
	e := decodeAs[api.ErrorBody](t, body).Error
	require.Equal(t, api.CodePlanVersionConflict, e.Code)
	require.Equal(t, created.Digest, e.Details["digest"])

	for _, tc := range []struct {
		name, token, body string
		status            int
		code              string
	}{
		{"no key", "", string(marshal(t, pushBody(versionDoc("2")))), http.StatusUnauthorized, api.CodeUnauthenticated},
		{"a viewer", viewerToken, string(marshal(t, pushBody(versionDoc("2")))), http.StatusForbidden, api.CodePermissionDenied},
		{"another tenant", operatorToken, `{"tenantId":"globex","projectId":"p","plan":` + planDoc + `}`, http.StatusForbidden, api.CodePermissionDenied},
		{"no project", operatorToken, `{"plan":` + planDoc + `}`, http.StatusBadRequest, api.CodeInvalidArgument},
		{"unknown member", operatorToken, `{"projectId":"p","plan":` + planDoc + `,"x":1}`, http.StatusBadRequest, api.CodeInvalidArgument},
		{"invalid JSON", operatorToken, `{"projectId":`, http.StatusBadRequest, api.CodeInvalidArgument},
	} {
		status, body, _ := s.request(t, streams.PlanPushSubject, tc.token, []byte(tc.body))
		require.Equal(t, tc.status, status, "%s: %s", tc.name, body)
		require.Equal(t, tc.code, decodeAs[api.ErrorBody](t, body).Error.Code, tc.name)
	}
	require.Equal(t, 1, s.rows(t, "plan_versions", ""), "nothing of the refusals is stored")
}

// TestNATSPlanGet: weft.plans.get answers the plan as GET
// /v1/plans/{planId}, or with planVersion the version with its plan as
// GET /v1/plans/{planId}/versions/{planVersion}; another tenant's or
// project's plan is 404 and a missing name 400.
func TestNATSPlanGet(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	s.push(t, versionDoc("1"), http.StatusCreated)
	s.push(t, versionDoc("2"), http.StatusCreated)

	status, body, _ := s.request(t, streams.PlanGetSubject, viewerToken, []byte(`{"projectId":"p","planId":"hello"}`))
	require.Equal(t, http.StatusOK, status, "%s", body)
	a := s.get(t, "/v1/plans/hello?projectId=p", viewerToken)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Equal(t, decodeAs[api.Plan](t, a.body), decodeAs[api.Plan](t, body))

	status, body, _ = s.request(t, streams.PlanGetSubject, viewerToken, []byte(`{"projectId":"p","planId":"hello","planVersion":"1"}`))
	require.Equal(t, http.StatusOK, status, "%s", body)
	a = s.get(t, "/v1/plans/hello/versions/1?projectId=p", viewerToken)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	v := decodeAs[api.PlanVersion](t, body)
	require.Equal(t, decodeAs[api.PlanVersion](t, a.body), v)
	require.NotEmpty(t, v.Plan, "a version comes with its plan")

	for _, tc := range []struct {
		name, token, body string
		status            int
		code              string
	}{
		{"no key", "", `{"projectId":"p","planId":"hello"}`, http.StatusUnauthorized, api.CodeUnauthenticated},
		{"no project", viewerToken, `{"planId":"hello"}`, http.StatusBadRequest, api.CodeInvalidArgument},
		{"no plan", viewerToken, `{"projectId":"p","planVersion":"1"}`, http.StatusBadRequest, api.CodeInvalidArgument},
		{"unknown member", viewerToken, `{"projectId":"p","planId":"hello","version":"1"}`, http.StatusBadRequest, api.CodeInvalidArgument},
		{"unknown version", viewerToken, `{"projectId":"p","planId":"hello","planVersion":"9"}`, http.StatusNotFound, api.CodeNotFound},
		{"another project", viewerToken, `{"projectId":"q","planId":"hello"}`, http.StatusNotFound, api.CodeNotFound},
		{"another tenant", strangerToken, `{"projectId":"p","planId":"hello","planVersion":"1"}`, http.StatusNotFound, api.CodeNotFound},
	} {
		status, body, _ := s.request(t, streams.PlanGetSubject, tc.token, []byte(tc.body))
		require.Equal(t, tc.status, status, "%s: %s", tc.name, body)
		require.Equal(t, tc.code, decodeAs[api.ErrorBody](t, body).Error.Code, tc.name)
	}
}

// TestNATSPlanPushAnswersOnlyInboxes: a push naming a stream's subject as
// its reply is dropped unhandled, as every ingress request is: it is
// counted and nothing is stored.
func TestNATSPlanPushAnswersOnlyInboxes(t *testing.T) {
	t.Parallel()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	s := setup(t, gateway.Config{DisableScheduler: true, MeterProvider: mp})
	m := nats.NewMsg(streams.PlanPushSubject)
	m.Reply = "weft.results.x"
	m.Header.Set("Authorization", "Bearer "+operatorToken)
	m.Data = marshal(t, pushBody(versionDoc("1")))
	require.NoError(t, s.nc.PublishMsg(m))
	require.NoError(t, s.nc.Flush())
	require.Eventually(t, func() bool {
		v, _ := metricstest.Get(t, h).Sum("weft_gateway_ingress_dropped_total", nil)
		return v == 1
	}, 10*time.Second, 10*time.Millisecond, "the push is dropped")
	require.Equal(t, 0, s.rows(t, "plan_versions", ""), "a dropped push stores nothing")

	status, body, _ := s.request(t, streams.PlanPushSubject, operatorToken, m.Data)
	require.Equal(t, http.StatusCreated, status, "the same push on an inbox is taken: %s", body)
}
