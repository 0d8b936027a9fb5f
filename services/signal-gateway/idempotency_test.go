package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/streams"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// idempotencyConflict: a repeat of an idempotency key with another body.
var idempotencyConflict = outcome{http.StatusConflict, api.CodeIdempotencyConflict,
	http.StatusOK, jsonrpc.CodeConflict, api.CodeIdempotencyConflict}

// TestStartRepeatWithAnotherBodyConflicts: a start that repeats the
// runRequestId of a retained start with another plan or input is refused
// with 409 IdempotencyConflict naming the first run, over REST, JSON-RPC
// and NATS, and writes nothing (issue 37, item 7: it was answered 200
// duplicate with the first run, silently). An exact repeat is still the
// duplicate, and so is one whose JSON differs only in key order and
// white space. A row stored before request digests (NULL) answers every
// repeat as the duplicate, as it did.
func TestStartRepeatWithAnotherBodyConflicts(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	body := func(input, plan string) []byte {
		return fmt.Appendf(nil, `{"tenantId":"acme","projectId":"p","environmentId":"dev","planId":"hello","planVersion":"1",`+
			`"runRequestId":"order-1","plan":%s,"input":%s}`, plan, input)
	}
	first := s.post(t, "/v1/runs", body(`{"n":1,"m":[1,2]}`, planDoc))
	require.Equal(t, http.StatusCreated, first.status, "%s", first.body)
	runID := decodeAs[api.StartRunResult](t, first.body).RunID

	t.Run("an exact repeat is the duplicate", func(t *testing.T) {
		reordered := `{ "steps": [{"activity":"echo","id":"a"},{"dependsOn":["a"],"signal":"go","kind":"waitSignal","id":"w"}],` +
			` "planVersion":"1", "planId":"hello" }`
		for _, b := range [][]byte{body(`{"n":1,"m":[1,2]}`, planDoc), body(`{ "m": [1, 2], "n": 1 }`, reordered)} {
			a := s.post(t, "/v1/runs", b)
			require.Equal(t, http.StatusOK, a.status, "%s", a.body)
			res := decodeAs[api.StartRunResult](t, a.body)
			require.True(t, res.Duplicate)
			require.Equal(t, runID, res.RunID)
		}
	})

	otherPlan := `{"planId":"hello","planVersion":"1","steps":[{"id":"a","activity":"echo2"},{"id":"w","kind":"waitSignal","signal":"go","dependsOn":["a"]}]}`
	cases := []struct{ name, body string }{
		{"another input", string(body(`{"n":2,"m":[1,2]}`, planDoc))},
		{"no input", string(body(`null`, planDoc))},
		{"another plan under the same planId and planVersion", string(body(`{"n":1,"m":[1,2]}`, otherPlan))},
	}
	const msg = `runRequestId "order-1" was used by an earlier start with another plan or input`
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.requireRefusedREST(t, exchange{path: "/v1/runs", body: []byte(tc.body)}, idempotencyConflict, msg)
			s.requireRefusedRPC(t, exchange{path: "/rpc", body: rpcCall("run.start", tc.body)}, idempotencyConflict, msg, rpcID)
			before := s.counts(t)
			status, reply, _ := s.request(t, streams.RunStartSubject, operatorToken, []byte(tc.body))
			require.Equal(t, http.StatusConflict, status, "%s", reply)
			e := decodeAs[api.ErrorBody](t, reply).Error
			require.Equal(t, api.CodeIdempotencyConflict, e.Code)
			require.Equal(t, map[string]any{"runId": runID, "runRequestId": "order-1"}, e.Details)
			require.Equal(t, before, s.counts(t), "nothing is persisted")
		})
	}

	t.Run("a row stored before digests answers as before", func(t *testing.T) {
		_, err := s.db.Pool.Exec(context.Background(), `UPDATE run_requests SET request_digest = NULL WHERE run_id = $1`, runID)
		require.NoError(t, err)
		a := s.post(t, "/v1/runs", body(`{"n":2}`, planDoc))
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
		res := decodeAs[api.StartRunResult](t, a.body)
		require.True(t, res.Duplicate)
		require.Equal(t, runID, res.RunID)
	})
}

// TestTriggerEventRepeatWithAnotherPayloadConflicts: an event is
// identified by its eventId, so a redelivery of it whose payload differs
// is refused with 409 IdempotencyConflict naming the first event's run,
// over REST, JSON-RPC and NATS, and starts nothing; a redelivery of the
// same payload is the duplicate.
func TestTriggerEventRepeatWithAnotherPayloadConflicts(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	s.createTrigger(t, "orders")
	a := s.post(t, "/v1/triggers/orders/events", []byte(`{"eventId":"evt-1","payload":{"order":1}}`))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	runID := decodeAs[api.TriggerEventResult](t, a.body).RunID

	a = s.post(t, "/v1/triggers/orders/events", []byte(`{"payload":{ "order": 1 },"eventId":"evt-1"}`))
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.True(t, decodeAs[api.TriggerEventResult](t, a.body).Duplicate)

	other := `{"eventId":"evt-1","payload":{"order":2}}`
	const msg = `event "evt-1" was sent to trigger "orders" before with another payload`
	s.requireRefusedREST(t, exchange{path: "/v1/triggers/orders/events", body: []byte(other)}, idempotencyConflict, msg)
	s.requireRefusedRPC(t, exchange{path: "/rpc", body: rpcCall("trigger.send", `{"triggerId":"orders","eventId":"evt-1"}`)},
		idempotencyConflict, msg, rpcID)
	subject, err := streams.TriggerSubject("orders")
	require.NoError(t, err)
	before := s.counts(t)
	status, reply, _ := s.request(t, subject, operatorToken, []byte(other))
	require.Equal(t, http.StatusConflict, status, "%s", reply)
	var b api.ErrorBody
	require.NoError(t, json.Unmarshal(reply, &b))
	require.Equal(t, api.CodeIdempotencyConflict, b.Error.Code)
	require.Equal(t, runID, b.Error.Details["runId"])
	require.Equal(t, before, s.counts(t), "nothing is persisted")
}
