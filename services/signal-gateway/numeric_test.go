package gateway_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// TestBadInputNumericRange: a number jsonb cannot hold, in a run's input or
// a signal's payload, is refused with 400 naming its path, over REST and
// JSON-RPC, before anything is stored (Postgres would answer 22003); the
// largest exponent jsonb holds is accepted and stored.
func TestBadInputNumericRange(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.run(t)
	cases := []struct {
		name, path, field string
		body              func(n string) string
	}{
		{"REST signal", signalsPath(runID), "payload.n", func(n string) string {
			return `{"signalName":"go","payload":{"n":` + n + `}}`
		}},
		{"REST start", "/v1/runs", "input.n", func(n string) string {
			return strings.Replace(goodStart, `"input":{"n":1}`, `"input":{"n":`+n+`}`, 1)
		}},
		{"JSON-RPC signal", "/rpc", "payload.n", func(n string) string {
			return string(rpcCall("signal.send", signalParams(runID, `{"signalName":"go","payload":{"n":`+n+`}}`)))
		}},
		{"JSON-RPC start", "/rpc", "input.n", func(n string) string {
			body := strings.Replace(goodStart, `"input":{"n":1}`, `"input":{"n":`+n+`}`, 1)
			return string(rpcCall("run.start", strings.Replace(body, `"bad-input"`, `"bad-input-rpc"`, 1)))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg := tc.field + ": is a number out of the range Postgres numeric can store"
			for _, n := range []string{"1e131072", "1e999999", "1e-16384"} {
				bad := exchange{path: tc.path, body: []byte(tc.body(n))}
				if tc.path != "/rpc" {
					s.requireRefusedREST(t, bad, invalidArgument, msg)
				} else {
					s.requireRefusedRPC(t, bad, invalidArgument, msg, answerID(invalidArgument))
				}
			}
			before := s.counts(t)
			a := s.send(t, exchange{path: tc.path, body: []byte(tc.body("1e131071"))})
			require.Less(t, a.status, 300, "%s", a.body)
			require.NotContains(t, string(a.body), `"error"`)
			require.Equal(t, before.events+1, s.counts(t).events)
		})
	}
}
