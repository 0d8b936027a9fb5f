package gateway_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// TestRPCSignalSendNamesTheRunRunID: JSON-RPC signal.send takes the run
// as runId, the name every other method and page gives it, as well as
// workflowId, the tier-0 contract's (issue 37, item 5). Params naming it
// both ways are refused, whatever the two say, with an InvalidArgument
// saying to give one; a bad or missing runId is refused under that name;
// nothing of a refusal is written.
func TestRPCSignalSendNamesTheRunRunID(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.run(t)

	byRunID := s.rpcOne(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"signal.send","params":{"runId":%q,"signalName":"go","signalId":"r-1"},"id":1}`, runID))
	require.Nil(t, byRunID.Error, "%+v", byRunID.Error)
	res := decodeAs[api.AcceptedSignalResult](t, byRunID.Result)
	require.Equal(t, runID, res.WorkflowID)
	require.Equal(t, "r-1", res.SignalID)

	byWorkflowID := s.rpcOne(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"signal.send","params":{"workflowId":%q,"signalName":"go","signalId":"r-1"},"id":2}`, runID))
	require.Nil(t, byWorkflowID.Error)
	require.JSONEq(t, string(byRunID.Result), string(byWorkflowID.Result), "the same signal, whichever name named its run")

	cases := []struct{ name, params, msg string }{
		{"both names, the same run", fmt.Sprintf(`{"runId":%q,"workflowId":%q,"signalName":"go"}`, runID, runID),
			"runId and workflowId both name the run: give one of them"},
		{"both names, two runs", fmt.Sprintf(`{"runId":%q,"workflowId":"01a2081e-baaa-76ec-8213-145ce019ed2b","signalName":"go"}`, runID),
			"give one of them"},
		{"a bad runId", `{"runId":"nope","signalName":"go"}`, `runId must be a run id (a UUID in canonical, lowercase form), not "nope"`},
		{"neither name", `{"signalName":"go"}`, `runId must be a run id`},
		{"a bad workflowId keeps its name", `{"workflowId":"nope","signalName":"go"}`, `workflowId must be a run id`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.requireRefusedRPC(t, exchange{path: "/rpc", body: rpcCall("signal.send", tc.params)}, invalidArgument, tc.msg, rpcID)
		})
	}
	t.Run("details name runId", func(t *testing.T) {
		r := s.rpcOne(t, `{"jsonrpc":"2.0","method":"signal.send","params":{"runId":"nope","signalName":""},"id":3}`)
		require.NotNil(t, r.Error)
		require.Equal(t, "runId", r.Error.Data.Details["field"], "%+v", r.Error.Data)
		require.Contains(t, r.Error.Data.Message, "2 problems", "the run and the name are both reported")
	})
}
