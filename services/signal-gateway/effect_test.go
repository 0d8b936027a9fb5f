package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// runWaiting starts a run over REST whose plan waits for each of names
// (intaketest.PlanWaitingFor) and returns its id.
func (s *stack) runWaiting(t *testing.T, names ...string) string {
	t.Helper()
	body := startBody(events.NewRunID())
	body["plan"] = intaketest.PlanWaitingFor(names...)
	a := s.post(t, "/v1/runs", body)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	var res api.StartRunResult
	require.NoError(t, json.Unmarshal(a.body, &res))
	return res.RunID
}

var (
	// unknownSignal: a name the run has no use for.
	unknownSignal = outcome{http.StatusBadRequest, api.CodeUnknownSignal,
		http.StatusOK, jsonrpc.CodeInvalidParams, api.CodeUnknownSignal}
	// runTerminal: a signal to a run that has ended, a conflict.
	runTerminal = outcome{http.StatusConflict, api.CodeRunTerminal,
		http.StatusOK, jsonrpc.CodeConflict, api.CodeRunTerminal}
)

// requireRefusedNATS publishes body as a request to runID's signal
// subject and requires the refusal want in the REST error shape, with its
// HTTP status in Weft-Status, and that nothing was persisted.
func (s *stack) requireRefusedNATS(t *testing.T, runID string, body []byte, want outcome, msg string) api.Error {
	t.Helper()
	subject, err := streams.SignalSubject(runID)
	require.NoError(t, err)
	before := s.counts(t)
	status, reply, _ := s.request(t, subject, operatorToken, body)
	require.Equal(t, want.status, status, "%s", reply)
	var b api.ErrorBody
	require.NoError(t, json.Unmarshal(reply, &b), "%s", reply)
	require.Equal(t, want.code, b.Error.Code, "%s", reply)
	require.Contains(t, b.Error.Message, msg)
	require.Equal(t, before, s.counts(t), "nothing is persisted")
	return b.Error
}

// TestSignalsWithoutEffect: a signal that could have no effect is refused
// in the same way over REST, JSON-RPC and NATS, each in its own shape,
// and nothing of it is written: a name the run has no use for, a
// RETRY_STEP without a stepId or of a step the plan does not have, a
// signal to a run that has ended. A repeat of a signal accepted before the
// run ended is still answered as the duplicate it is.
func TestSignalsWithoutEffect(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.runWaiting(t, "approve")
	ended := s.runWaiting(t, "approve")
	first := s.post(t, signalsPath(ended), []byte(`{"signalName":"approve","signalId":"early"}`))
	require.Equal(t, http.StatusAccepted, first.status, "%s", first.body)
	intaketest.EndRun(t, s.db.Pool, ended, events.RunCompleted)

	cases := []struct {
		name, runID, body string
		want              outcome
		msg               string
	}{
		{"misspelt name", runID, `{"signalName":"aprove","signalId":"1"}`, unknownSignal,
			`has no use for a signal named "aprove": it takes PAUSE, RESUME, CANCEL, RETRY_STEP, approve`},
		{"made-up name", runID, `{"signalName":"FROBNICATE"}`, unknownSignal, `named "FROBNICATE"`},
		{"lower-case control signal", runID, `{"signalName":"pause"}`, unknownSignal, `did you mean "PAUSE"?`},
		{"RETRY_STEP without a payload", runID, `{"signalName":"RETRY_STEP"}`, invalidArgument, `payload of RETRY_STEP must be {"stepId": "<id>"}`},
		{"RETRY_STEP without stepId", runID, `{"signalName":"RETRY_STEP","payload":{"step":"a"}}`, invalidArgument, `{"stepId": "<id>"}`},
		{"RETRY_STEP of no step", runID, `{"signalName":"RETRY_STEP","payload":{"stepId":"nope"}}`, invalidArgument,
			`names step "nope", which the run's plan does not have`},
		{"signal to an ended run", ended, `{"signalName":"approve","signalId":"late"}`, runTerminal, "has ended COMPLETED and takes no more signals"},
		{"CANCEL of an ended run", ended, `{"signalName":"CANCEL"}`, runTerminal, "has ended COMPLETED"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.requireRefusedREST(t, exchange{path: signalsPath(tc.runID), body: []byte(tc.body)}, tc.want, tc.msg)
			s.requireRefusedRPC(t, exchange{path: "/rpc", body: rpcCall("signal.send", signalParams(tc.runID, tc.body))},
				tc.want, tc.msg, rpcID)
			s.requireRefusedNATS(t, tc.runID, []byte(tc.body), tc.want, tc.msg)
		})
	}

	t.Run("details", func(t *testing.T) {
		e := s.requireRefusedNATS(t, runID, []byte(`{"signalName":"aprove"}`), unknownSignal, "aprove")
		require.Equal(t, []any{"PAUSE", "RESUME", "CANCEL", "RETRY_STEP", "approve"}, e.Details["accepts"])
		e = s.requireRefusedNATS(t, ended, []byte(`{"signalName":"PAUSE"}`), runTerminal, "COMPLETED")
		require.Equal(t, map[string]any{"runId": ended, "signalName": "PAUSE", "status": "COMPLETED"}, e.Details)
	})

	t.Run("a repeat of an accepted signal is still a duplicate", func(t *testing.T) {
		before := s.counts(t)
		a := s.post(t, signalsPath(ended), []byte(`{"signalName":"approve","signalId":"early"}`))
		require.Equal(t, http.StatusAccepted, a.status, "%s", a.body)
		require.Equal(t, "true", a.header.Get(gateway.HeaderDuplicate))
		require.JSONEq(t, string(first.body), string(a.body))
		r := s.rpcOK(t, exchange{path: "/rpc", body: rpcCall("signal.send", signalParams(ended, `{"signalName":"approve","signalId":"early"}`))})
		require.JSONEq(t, string(first.body), string(r.Result))
		require.Equal(t, before, s.counts(t))
	})
}
