package gateway_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/testkit/openapitest"
	"github.com/weftrun/weft/pkg/api"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// TestOpenAPINoParamsBody holds pause and resume to the body the document
// gives them: optional, and an object without members. A body the schema
// takes is answered 200, one it refuses 400; each answer is documented.
func TestOpenAPINoParamsBody(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	d := openapitest.Load(t, "openapi.json")
	a := s.post(t, "/v1/schedules", scheduleBody("nightly"))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)

	for _, action := range []string{"pause", "resume"} {
		tmpl := "/v1/schedules/{scheduleId}/" + action
		op := d.Operations()["POST "+tmpl]
		ref, _ := object(t, op, "requestBody")["$ref"].(string)
		body := d.Resolve(t, object(t, op, "requestBody"))
		require.Equal(t, false, body["required"], "%s: the body is optional", tmpl)
		sch := d.Schema(t, ref+"/content/application~1json/schema")

		for _, tc := range []struct {
			body string
			want int
		}{
			{"", http.StatusOK}, // no body
			{"{}", http.StatusOK},
			{" { } ", http.StatusOK},
			{`{"now":true}`, http.StatusBadRequest},
			{`{"scheduleId":"nightly"}`, http.StatusBadRequest},
			{`[]`, http.StatusBadRequest},
			{`"x"`, http.StatusBadRequest},
			{`null`, http.StatusBadRequest},
		} {
			var sent []byte
			if tc.body != "" {
				sent = []byte(tc.body)
				v, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.body))
				require.NoError(t, err)
				require.Equal(t, tc.want == http.StatusOK, sch.Validate(v) == nil, "%s: the schema on %s", tmpl, tc.body)
			}
			a, err := s.do(t, http.MethodPost, "/v1/schedules/nightly/"+action, operatorToken, sent)
			require.NoError(t, err)
			require.Equal(t, tc.want, a.status, "%s with %q: %s", tmpl, tc.body, a.body)
			require.Contains(t, object(t, op, "responses"), strconv.Itoa(a.status), tmpl)
			if tc.want == http.StatusOK {
				require.Equal(t, action == "pause", decodeAs[api.Schedule](t, a.body).Paused, "%s with %q", tmpl, tc.body)
			} else {
				require.Equal(t, api.CodeInvalidArgument, a.errorBody(t).Code, "%s with %q: %s", tmpl, tc.body, a.body)
			}
		}
		a, err := s.do(t, http.MethodPost, "/v1/schedules/nightly/"+action, operatorToken, []byte("{}"), "Content-Type", "text/plain")
		require.NoError(t, err)
		require.Equal(t, http.StatusUnsupportedMediaType, a.status, "%s: a body is declared JSON: %s", tmpl, a.body)
		require.Contains(t, object(t, op, "responses"), "415", tmpl)
	}
}

// TestOpenAPIParamsAnObject holds every JSON-RPC method to the document's
// params, an object: params that are an array are refused with -32602
// and InvalidArgument, whatever the method.
func TestOpenAPIParamsAnObject(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	d := openapitest.Load(t, "openapi.json")
	pointer := "/components/schemas/JsonRpcRequest/properties"
	request := d.Resolve(t, map[string]any{"$ref": "#" + pointer})
	methods := openapitest.List(object(t, request, "method")["examples"])
	require.Len(t, methods, 17, "the document lists every method")
	sch := d.Schema(t, pointer+"/params")

	for _, params := range []string{`[]`, `["nightly"]`, `[{"scheduleId":"nightly"}]`} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(params))
		require.NoError(t, err)
		require.Error(t, sch.Validate(v), "the document refuses params %s", params)
		for _, m := range methods {
			r := s.rpcOne(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s,"id":1}`, m, params))
			require.NotNil(t, r.Error, "%s with params %s", m, params)
			require.Equal(t, jsonrpc.CodeInvalidParams, r.Error.Code, "%s with params %s: %s", m, params, r.Error.Message)
			require.Equal(t, api.CodeInvalidArgument, r.Error.Data.Code, "%s with params %s", m, params)
		}
	}
}
