package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/strictjson"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// TestBuiltinSignalPayloadFields: the payload of a built-in signal may
// hold only the fields that signal takes (RETRY_STEP: stepId; PAUSE,
// RESUME, CANCEL: none). Any other field is refused over REST, JSON-RPC
// and NATS alike as an InvalidArgument whose problems name it, and
// nothing is written, where it used to be accepted and dropped
// (issue 37, item 1: a RETRY_STEP carrying edited input answered
// "Applied" and ran the step with its old input). The payloads the
// signals take are still accepted.
func TestBuiltinSignalPayloadFields(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.run(t)

	cases := []struct {
		name, body, path, msg string
	}{
		{"RETRY_STEP with input", `{"signalName":"RETRY_STEP","payload":{"stepId":"a","input":{"n":2}}}`,
			"payload.input", `payload.input is not a field of RETRY_STEP's payload, which is {"stepId": "<id>"}`},
		{"RETRY_STEP with a field in another case", `{"signalName":"RETRY_STEP","payload":{"StepId":"a","stepId":"a"}}`,
			"payload.StepId", `payload.StepId is not a field of RETRY_STEP's payload`},
		{"CANCEL with a reason", `{"signalName":"CANCEL","payload":{"reason":"done"}}`,
			"payload.reason", `payload.reason is not a field of CANCEL's payload, which takes none`},
		{"PAUSE with an odd key", `{"signalName":"PAUSE","payload":{"a b":1}}`,
			`payload["a b"]`, `payload["a b"] is not a field of PAUSE's payload`},
		{"RESUME with a string", `{"signalName":"RESUME","payload":"now"}`,
			"payload", `payload of RESUME must be absent, null or {}: RESUME takes no payload`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.requireRefusedREST(t, exchange{path: signalsPath(runID), body: []byte(tc.body)}, invalidArgument, tc.msg)
			s.requireRefusedRPC(t, exchange{path: "/rpc", body: rpcCall("signal.send", signalParams(runID, tc.body))},
				invalidArgument, tc.msg, rpcID)
			e := s.requireRefusedNATS(t, runID, []byte(tc.body), invalidArgument, tc.msg)
			require.Equal(t, "payload", e.Details["field"])
			problems := decodeAs[[]api.Problem](t, mustJSON(t, e.Details["problems"]))
			require.Len(t, problems, 1)
			require.Equal(t, tc.path, problems[0].Path)
			if tc.path != "payload" {
				require.Equal(t, strictjson.CodeUnknownField, problems[0].Code)
			}
		})
	}

	t.Run("the payloads the signals take are accepted", func(t *testing.T) {
		for i, body := range []string{
			`{"signalName":"RETRY_STEP","payload":{"stepId":"a"}}`,
			`{"signalName":"PAUSE"}`,
			`{"signalName":"PAUSE","payload":null}`,
			`{"signalName":"RESUME","payload":{}}`,
			`{"signalName":"go","payload":{"input":1,"anything":true}}`,
		} {
			a := s.post(t, signalsPath(runID), []byte(body))
			require.Equal(t, http.StatusAccepted, a.status, "%d: %s: %s", i, body, a.body)
		}
	})
}

// mustJSON encodes v, for decoding into a typed value.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
