package gateway_test

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/testkit/openapitest"
	"github.com/weftrun/weft/pkg/api"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// routes are the gateway's routes, as Handler registers them: the
// document must describe exactly these.
var routes = []string{
	"POST /v1/runs",
	"POST /v1/runs/{runId}/signals",
	"POST /v1/runs/{runId}/rerun",
	"POST /v1/bulk",
	"GET /v1/bulk/{bulkId}",
	"POST /v1/bulk/{bulkId}/cancel",
	"POST /v1/schedules",
	"GET /v1/schedules",
	"GET /v1/schedules/{scheduleId}",
	"PUT /v1/schedules/{scheduleId}",
	"DELETE /v1/schedules/{scheduleId}",
	"POST /v1/schedules/{scheduleId}/pause",
	"POST /v1/schedules/{scheduleId}/resume",
	"POST /v1/plans",
	"GET /v1/plans",
	"GET /v1/plans/{planId}",
	"GET /v1/plans/{planId}/versions/{planVersion}",
	"POST /v1/plans/{planId}/versions/{planVersion}/archive",
	"POST /v1/plans/{planId}/versions/{planVersion}/restore",
	"POST /v1/triggers",
	"GET /v1/triggers",
	"GET /v1/triggers/{triggerId}",
	"DELETE /v1/triggers/{triggerId}",
	"POST /v1/triggers/{triggerId}/events",
	"POST /rpc",
	"GET /openapi.json",
	"GET /healthz",
}

// TestOpenAPIDocument checks the served OpenAPI document: the
// document-level checks of openapitest, then against the gateway: its
// routes and its error codes.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})

	served, err := s.do(t, http.MethodGet, "/openapi.json", "", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, served.status)
	d := openapitest.Check(t, served.body, "openapi.json")
	found, err := d.Examples()
	require.NoError(t, err)
	require.Greater(t, len(found), 30, "the document's examples are found")

	t.Run("routes", func(t *testing.T) { checkRoutes(t, s, d) })
	t.Run("error codes", func(t *testing.T) { checkErrorCodes(t, d.Tree) })
}

// checkRoutes requires the document's operations to be the gateway's
// routes, and each to be served: a request to it is answered with one of
// its documented statuses, never the unknown-endpoint 404. Other methods
// on a documented path are not served.
func checkRoutes(t *testing.T, s *stack, d *openapitest.Doc) {
	paths := object(t, d.Tree, "paths")
	ops := d.Operations()
	require.ElementsMatch(t, routes, slices.Collect(maps.Keys(ops)))

	runPath := "/v1/runs/" + uuid.NewString() + "/signals"
	rerunPath := "/v1/runs/" + uuid.NewString() + "/rerun"
	probes := []struct {
		route, path, token, body, code string
	}{
		// Without a key every POST is refused before its body is read.
		{"POST /v1/runs", "/v1/runs", "", "{}", api.CodeUnauthenticated},
		{"POST /v1/runs/{runId}/signals", runPath, "", "{}", api.CodeUnauthenticated},
		{"POST /v1/runs/{runId}/rerun", rerunPath, "", "{}", api.CodeUnauthenticated},
		{"POST /rpc", "/rpc", "", "{}", ""},
		{"GET /v1/schedules", "/v1/schedules", "", "", api.CodeUnauthenticated},
		{"DELETE /v1/triggers/{triggerId}", "/v1/triggers/t", "", "", api.CodeUnauthenticated},
		// With a key, requests that change nothing.
		{"POST /v1/runs", "/v1/runs", operatorToken, "{}", api.CodeInvalidArgument},
		{"POST /v1/runs/{runId}/signals", runPath, operatorToken, `{"signalName":"go"}`, api.CodeNotFound},
		{"POST /v1/runs/{runId}/rerun", rerunPath, operatorToken, `{"fromStepId":"a"}`, api.CodeNotFound},
		{"POST /v1/bulk", "/v1/bulk", operatorToken, "{}", api.CodeInvalidArgument},
		{"GET /v1/bulk/{bulkId}", "/v1/bulk/none", operatorToken, "", api.CodeNotFound},
		{"POST /v1/bulk/{bulkId}/cancel", "/v1/bulk/none/cancel", operatorToken, "", api.CodeNotFound},
		{"POST /v1/schedules", "/v1/schedules", operatorToken, "{}", api.CodeInvalidArgument},
		{"GET /v1/schedules", "/v1/schedules", operatorToken, "", ""},
		{"GET /v1/schedules/{scheduleId}", "/v1/schedules/none", operatorToken, "", api.CodeNotFound},
		{"PUT /v1/schedules/{scheduleId}", "/v1/schedules/none", operatorToken, "{}", api.CodeInvalidArgument},
		{"DELETE /v1/schedules/{scheduleId}", "/v1/schedules/none", operatorToken, "", api.CodeNotFound},
		{"POST /v1/schedules/{scheduleId}/pause", "/v1/schedules/none/pause", operatorToken, "", api.CodeNotFound},
		{"POST /v1/schedules/{scheduleId}/resume", "/v1/schedules/none/resume", operatorToken, "{}", api.CodeNotFound},
		{"POST /v1/plans", "/v1/plans", operatorToken, "{}", api.CodeInvalidArgument},
		{"GET /v1/plans", "/v1/plans", operatorToken, "", ""},
		{"GET /v1/plans/{planId}", "/v1/plans/none?projectId=p", operatorToken, "", api.CodeNotFound},
		{"GET /v1/plans/{planId}/versions/{planVersion}", "/v1/plans/none/versions/1?projectId=p", operatorToken, "", api.CodeNotFound},
		{"POST /v1/plans/{planId}/versions/{planVersion}/archive", "/v1/plans/none/versions/1/archive?projectId=p", operatorToken, "", api.CodeNotFound},
		{"POST /v1/plans/{planId}/versions/{planVersion}/restore", "/v1/plans/none/versions/1/restore?projectId=p", operatorToken, "{}", api.CodeNotFound},
		{"POST /v1/runs", "/v1/runs", operatorToken, `{"tenantId":"acme","projectId":"p","environmentId":"dev","planRef":{"planId":"none","planVersion":"1"}}`, api.CodeNotFound},
		{"POST /v1/triggers", "/v1/triggers", operatorToken, "{}", api.CodeInvalidArgument},
		{"GET /v1/triggers", "/v1/triggers", operatorToken, "", ""},
		{"GET /v1/triggers/{triggerId}", "/v1/triggers/none", operatorToken, "", api.CodeNotFound},
		{"DELETE /v1/triggers/{triggerId}", "/v1/triggers/none", operatorToken, "", api.CodeNotFound},
		{"POST /v1/triggers/{triggerId}/events", "/v1/triggers/none/events", operatorToken, "{}", api.CodeNotFound},
		{"POST /rpc", "/rpc", operatorToken, `{"jsonrpc":"2.0","method":"nope","id":1}`, ""},
		{"GET /openapi.json", "/openapi.json", "", "", ""},
		{"GET /healthz", "/healthz", "", "", ""},
	}
	probed := map[string]bool{}
	for _, p := range probes {
		method, _, _ := strings.Cut(p.route, " ")
		var body []byte
		if p.body != "" {
			body = []byte(p.body)
		}
		a, err := s.do(t, method, p.path, p.token, body)
		require.NoError(t, err, p.route)
		requireServed(t, p.route, a)
		_, documented := object(t, ops[p.route], "responses")[strconv.Itoa(a.status)]
		require.True(t, documented, "%s answered %d, which the document does not list: %s", p.route, a.status, a.body)
		if p.code != "" {
			require.Equal(t, p.code, a.errorBody(t).Code, "%s: %s", p.route, a.body)
		}
		probed[p.route] = true
	}
	for _, r := range routes {
		require.True(t, probed[r], "route %s is not probed", r)
	}

	// The methods the document leaves out are not served.
	for tmpl, item := range paths {
		path := strings.NewReplacer("{runId}", uuid.NewString(), "{scheduleId}", "s", "{triggerId}", "t", "{bulkId}", "b", "{planId}", "p", "{planVersion}", "1").Replace(tmpl)
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if _, ok := item.(map[string]any)[strings.ToLower(m)]; ok {
				continue
			}
			a, err := s.do(t, m, path, operatorToken, []byte("{}"))
			require.NoError(t, err)
			if a.status == http.StatusMethodNotAllowed {
				require.Equal(t, api.CodeMethodNotAllowed, a.errorBody(t).Code)
				continue
			}
			require.Equal(t, http.StatusNotFound, a.status, "%s %s is served but not documented: %s", m, tmpl, a.body)
			require.True(t, strings.HasPrefix(a.errorBody(t).Message, "no such endpoint"), "%s %s: %s", m, tmpl, a.body)
		}
	}
}

// requireServed fails when a is the answer to a path the gateway does not
// serve: its catch-all 404, or a 405.
func requireServed(t *testing.T, route string, a answer) {
	t.Helper()
	require.NotEqual(t, http.StatusMethodNotAllowed, a.status, "%s: %s", route, a.body)
	if a.status == http.StatusNotFound {
		e := a.errorBody(t)
		require.False(t, strings.HasPrefix(e.Message, "no such endpoint"), "%s is not served: %s", route, a.body)
	}
}

// checkErrorCodes requires the Error schema to list exactly pkg/api's
// error codes, and the JSON-RPC error schema the jsonrpc package's.
func checkErrorCodes(t *testing.T, doc map[string]any) {
	schemas := object(t, object(t, doc, "components"), "schemas")
	code := object(t, object(t, object(t, schemas, "Error"), "properties"), "code")
	require.ElementsMatch(t, []any{
		api.CodeInvalidArgument, api.CodeUnsupportedMediaType, api.CodePayloadTooLarge,
		api.CodeUnauthenticated, api.CodePermissionDenied, api.CodeNotFound,
		api.CodeRateLimited, api.CodeOverloaded, api.CodeSignalAcceptanceIndeterminate,
		api.CodeUnknownSignal, api.CodeRunTerminal, api.CodeIdempotencyConflict,
		api.CodeAlreadyExists, api.CodeQuotaExceeded, api.CodePlanVersionConflict, api.CodePlanArchived, api.CodeRerunRefused, api.CodeMethodNotAllowed, api.CodeInternal, api.CodeUnavailable,
	}, code["enum"])

	rpcCode := object(t, object(t, object(t, schemas, "JsonRpcError"), "properties"), "code")
	want := []int{
		jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeMethodNotFound,
		jsonrpc.CodeInvalidParams, jsonrpc.CodeInternalError, jsonrpc.CodeUnauthenticated,
		jsonrpc.CodePermissionDenied, jsonrpc.CodeNotFound, jsonrpc.CodeConflict,
		jsonrpc.CodePayloadTooLarge, jsonrpc.CodeRateLimited, jsonrpc.CodeUnavailable,
	}
	enum, ok := rpcCode["enum"].([]any)
	require.True(t, ok, "JsonRpcError.code has no enum")
	var got []int
	for _, v := range enum {
		f, isNumber := v.(float64)
		require.True(t, isNumber, "JSON-RPC code %v is not a number", v)
		got = append(got, int(f))
	}
	slices.Sort(got)
	slices.Sort(want)
	require.Equal(t, want, got)
}

// object returns the member key of m, which must be a JSON object.
var object = openapitest.Object
