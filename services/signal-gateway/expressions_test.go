package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// badExpressionPlan names, in step b, a step that is not its ancestor.
const badExpressionPlan = `{"planId":"hello","planVersion":"1","steps":[
	{"id":"a","activity":"echo","input":{"v":"${{ input.n }}"}},
	{"id":"b","activity":"echo","input":{"v":"${{ steps.a.output }}"}}]}`

// A plan whose expression does not compile is refused with the field's
// path and the position in the expression, the same over REST and
// JSON-RPC, and nothing is written.
func TestBadExpressionIsRefusedBeforeAnythingIsStored(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	before := s.counts(t)
	body := startBody(events.NewRunID())
	body["plan"] = json.RawMessage(badExpressionPlan)

	s.requireStartRefused(t, body, "INVALID_EXPRESSION", `[{"path": "plan.steps[id=b].input.v", "code": "INVALID_EXPRESSION", "stepId": "b",
		"message": "column 7: step \"a\" is not a step this one depends on, directly or not: only their results can be read"}]`)
	require.Equal(t, before, s.counts(t), "a refused plan writes nothing")
}

// requireStartRefused requires the start body to be refused 400
// InvalidArgument over REST with exactly the problems wantProblems (JSON),
// and over JSON-RPC with a problem of code.
func (s *stack) requireStartRefused(t *testing.T, body map[string]any, code, wantProblems string) {
	t.Helper()
	a := s.post(t, "/v1/runs", body)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	e := a.errorBody(t)
	require.Equal(t, api.CodeInvalidArgument, e.Code)
	problems, _ := json.Marshal(e.Details["problems"])
	require.JSONEq(t, wantProblems, string(problems))

	params, err := json.Marshal(body)
	require.NoError(t, err)
	r := s.rpcOne(t, `{"jsonrpc":"2.0","method":"run.start","params":`+string(params)+`,"id":1}`)
	require.NotNil(t, r.Error)
	problems, _ = json.Marshal(r.Error.Data.Details["problems"])
	require.Contains(t, string(problems), `"code":"`+code+`"`)
}
