package gateway_test

import (
	"encoding/json"
	"net/http"
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

// A schedule's input and a trigger event's payload are held to the same
// rule on every transport they arrive by: 400 naming the field, and no
// schedule, trigger run or event written (issue #36 finding 4).
func TestBadInputNumericRangeSchedulesAndTriggers(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	s.createTrigger(t, "orders")
	const msg = ": is a number out of the range Postgres numeric can store"
	schedules := func() int {
		var n int
		require.NoError(t, s.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM schedules`).Scan(&n))
		return n
	}
	for _, n := range []string{"1e131072", "1e999999"} {
		sched, err := json.Marshal(scheduleBody("nightly", "input", json.RawMessage(`{"n":`+n+`}`)))
		require.NoError(t, err)
		s.requireRefusedREST(t, exchange{path: "/v1/schedules", body: sched}, invalidArgument, "input.n"+msg)
		ev := []byte(`{"eventId":"e1","payload":{"n":` + n + `}}`)
		s.requireRefusedREST(t, exchange{path: "/v1/triggers/orders/events", body: ev}, invalidArgument, "payload.n"+msg)
		s.requireRefusedRPC(t, exchange{path: "/rpc", body: rpcCall("trigger.send",
			`{"triggerId":"orders","eventId":"e1","payload":{"n":`+n+`}}`)}, invalidArgument, "payload.n"+msg, answerID(invalidArgument))
	}
	require.Zero(t, schedules())
	sched, err := json.Marshal(scheduleBody("nightly", "input", json.RawMessage(`{"n":1e131071}`)))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, s.send(t, exchange{path: "/v1/schedules", body: sched}).status)
	require.Equal(t, 1, schedules())
	a := s.send(t, exchange{path: "/v1/triggers/orders/events", body: []byte(`{"eventId":"e1","payload":{"n":1e131071}}`)})
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
}
