package gateway_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/plan"
	gateway "github.com/weftrun/weft/services/signal-gateway"
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
