package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// rpcResponse is one JSON-RPC response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int       `json:"code"`
		Message string    `json:"message"`
		Data    api.Error `json:"data"`
	} `json:"error"`
}

func (s *stack) rpc(t *testing.T, body string) (int, []byte) {
	t.Helper()
	a := s.post(t, "/rpc", []byte(body))
	return a.status, a.body
}

func (s *stack) rpcOne(t *testing.T, body string) rpcResponse {
	t.Helper()
	status, raw := s.rpc(t, body)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	var r rpcResponse
	require.NoError(t, json.Unmarshal(raw, &r), "%s", raw)
	require.Equal(t, "2.0", r.JSONRPC)
	return r
}

func TestRPCStartAndSignal(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	start, err := json.Marshal(startBody("rpc-1"))
	require.NoError(t, err)
	r := s.rpcOne(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"run.start","params":%s,"id":1}`, start))
	require.Nil(t, r.Error)
	var run api.StartRunResult
	require.NoError(t, json.Unmarshal(r.Result, &run))
	require.False(t, run.Duplicate)

	again := s.rpcOne(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"run.start","params":%s,"id":2}`, start))
	var dup api.StartRunResult
	require.NoError(t, json.Unmarshal(again.Result, &dup))
	require.True(t, dup.Duplicate)
	require.Equal(t, run.RunID, dup.RunID)

	sig := fmt.Sprintf(`{"workflowId":%q,"signalName":"go","signalId":"s-1","payload":{"a":1}}`, run.RunID)
	first := s.rpcOne(t, `{"jsonrpc":"2.0","method":"signal.send","params":`+sig+`,"id":"first"}`)
	require.Nil(t, first.Error)
	require.JSONEq(t, `"first"`, string(first.ID))
	replay := s.rpcOne(t, `{"jsonrpc":"2.0","method":"signal.send","params":`+sig+`,"id":"second"}`)
	require.JSONEq(t, `"second"`, string(replay.ID), "a replay answers with the duplicate request's own id")
	var a, b api.AcceptedSignalResult
	require.NoError(t, json.Unmarshal(first.Result, &a))
	require.NoError(t, json.Unmarshal(replay.Result, &b))
	require.Equal(t, a, b)
	require.Equal(t, 1, s.counts(t).acceptances)
}

func TestRPCBatchesAndNotifications(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.run(t)
	sig := func(id string) string {
		return fmt.Sprintf(`{"workflowId":%q,"signalName":"go","signalId":%q}`, runID, id)
	}
	status, raw := s.rpc(t, `[
		{"jsonrpc":"2.0","method":"signal.send","params":`+sig("b-1")+`,"id":1},
		{"jsonrpc":"2.0","method":"signal.send","params":`+sig("b-2")+`},
		{"jsonrpc":"2.0","method":"nope","id":3},
		{"jsonrpc":"2.0","method":"signal.send","params":{"workflowId":"x","signalName":"go"},"id":4}
	]`)
	require.Equal(t, http.StatusOK, status)
	var rs []rpcResponse
	require.NoError(t, json.Unmarshal(raw, &rs), "%s", raw)
	require.Len(t, rs, 3, "the notification gets no response")
	require.Nil(t, rs[0].Error)
	require.Equal(t, -32601, rs[1].Error.Code)
	require.Equal(t, -32602, rs[2].Error.Code)
	require.Equal(t, api.CodeInvalidArgument, rs[2].Error.Data.Code)
	require.Equal(t, 2, s.counts(t).acceptances, "the notification was executed")

	status, raw = s.rpc(t, `{"jsonrpc":"2.0","method":"signal.send","params":`+sig("n-1")+`}`)
	require.Equal(t, http.StatusNoContent, status)
	require.Empty(t, raw)
	require.Equal(t, 3, s.counts(t).acceptances)
}

func TestRPCConflictAndAuth(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.run(t)
	s.orphanPayload(t, runID, "go", "lost")
	r := s.rpcOne(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"signal.send","params":{"workflowId":%q,"signalName":"go","signalId":"lost"},"id":9}`, runID))
	require.NotNil(t, r.Error)
	require.Equal(t, -32009, r.Error.Code, "Weft's one conflict code")
	require.Equal(t, api.CodeSignalAcceptanceIndeterminate, r.Error.Data.Code)
	require.Equal(t, "lost", r.Error.Data.Details["signalId"])
	require.NotEmpty(t, r.Error.Data.Details["correlationId"])

	before := s.counts(t)
	a, err := s.do(t, http.MethodPost, "/rpc", "", []byte(`{"jsonrpc":"2.0","method":"signal.send","params":{},"id":1}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, a.status)
	var unauth rpcResponse
	require.NoError(t, json.Unmarshal(a.body, &unauth))
	require.Equal(t, -32001, unauth.Error.Code)
	require.Equal(t, before, s.counts(t))

	missing := s.rpcOne(t, `{"jsonrpc":"2.0","method":"signal.send","params":{"workflowId":"0190a8e2-0000-7000-8000-000000000001","signalName":"go"},"id":1}`)
	require.Equal(t, -32004, missing.Error.Code)
}

// TestFaultCarriesCorrelationID breaks the gateway's database under it:
// REST answers 500 Internal and JSON-RPC -32603 with the same error as
// data, each with the correlation id the fault was logged with and
// nothing of the fault's text.
func TestFaultCarriesCorrelationID(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.run(t)
	_, err := s.db.Pool.Exec(t.Context(), `ALTER TABLE signal_acceptances RENAME TO signal_acceptances_gone`)
	require.NoError(t, err)

	a := s.post(t, "/v1/runs/"+runID+"/signals", map[string]any{"signalName": "go", "signalId": "broken-rest"})
	require.Equal(t, http.StatusInternalServerError, a.status, "%s", a.body)
	e := a.errorBody(t)
	require.Equal(t, api.CodeInternal, e.Code)
	require.NotEmpty(t, e.Details["correlationId"])
	require.NotContains(t, string(a.body), "signal_acceptances")

	r := s.rpcOne(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"signal.send","params":{"workflowId":%q,"signalName":"go","signalId":"broken-rpc"},"id":4}`, runID))
	require.NotNil(t, r.Error)
	require.Equal(t, -32603, r.Error.Code)
	require.Equal(t, api.CodeInternal, r.Error.Data.Code)
	require.NotEmpty(t, r.Error.Data.Details["correlationId"])
	require.NotContains(t, r.Error.Message, "signal_acceptances")
}
