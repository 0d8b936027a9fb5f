package trigger_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
	"github.com/weftrun/weft/services/signal-gateway/internal/trigger"
)

// withInput is request(id) with the input expression src.
func withInput(id, src string) api.TriggerRequest {
	req := request(id)
	req.Input = src
	return req
}

// TestInputExpression: a trigger's input expression over event gives each
// run its input; it is kept with the trigger and part of its definition;
// without a payload, event.payload is null.
func TestInputExpression(t *testing.T) {
	t.Parallel()
	b := setup(t, trigger.Config{}, intake.Config{})
	src := `${{ {"order": event.payload.order, "via": event.triggerId + "/" + event.id} }}`
	tr, created, err := b.svc.Create(t.Context(), op, withInput("orders", src))
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, src, tr.Input)
	got, err := b.svc.Get(t.Context(), op, "orders")
	require.NoError(t, err)
	require.Equal(t, src, got.Input)
	_, _, err = b.svc.Create(t.Context(), op, withInput("orders", "event.payload"))
	intaketest.RequireRefused(t, err, api.CodeAlreadyExists, "")
	_, _, err = b.svc.Create(t.Context(), op, request("orders"))
	intaketest.RequireRefused(t, err, api.CodeAlreadyExists, "")

	res, created, err := b.svc.Send(t.Context(), op, "orders", trigger.Event{ID: ptr("evt_1"), Payload: json.RawMessage(`{"order": 4711}`)})
	require.NoError(t, err)
	require.True(t, created)
	require.JSONEq(t, `{"order": 4711, "via": "orders/evt_1"}`, b.runInput(t, res.RunID))

	_, _, err = b.svc.Create(t.Context(), op, withInput("bare", "event.payload == null"))
	require.NoError(t, err)
	res, _, err = b.svc.Send(t.Context(), op, "bare", trigger.Event{ID: ptr("evt_1")})
	require.NoError(t, err)
	require.JSONEq(t, `true`, b.runInput(t, res.RunID))

	_, _, err = b.svc.Create(t.Context(), op, request("plain"))
	require.NoError(t, err)
	res, _, err = b.svc.Send(t.Context(), op, "plain", trigger.Event{ID: ptr("evt_1")})
	require.NoError(t, err)
	require.JSONEq(t, `null`, b.runInput(t, res.RunID), "no payload, no input")
}

// TestBadInputExpressionIsRefusedAtCreate: the path and the column, as a
// plan's expression problems, and nothing stored.
func TestBadInputExpressionIsRefusedAtCreate(t *testing.T) {
	t.Parallel()
	b := setup(t, trigger.Config{}, intake.Config{})
	for src, want := range map[string]string{
		`event.payload.`:            "column 15: Syntax error",
		`${{ input.order }}`:        "column 1: undeclared reference to 'input'",
		`{"a": event.payload} + 1`:  "no matching overload",
		`${{ event.payload.order }`: "is not closed",
		"${{ " + longExpr() + " }}": "over the limit of 4096",
	} {
		_, _, err := b.svc.Create(t.Context(), op, withInput("orders", src))
		e := intaketest.RequireRefused(t, err, api.CodeInvalidArgument, "input")
		problems, _ := json.Marshal(e.Details["problems"])
		var list []map[string]string
		require.NoError(t, json.Unmarshal(problems, &list), src)
		require.Len(t, list, 1, src)
		require.Equal(t, "input", list[0]["path"], src)
		require.Equal(t, "INVALID_EXPRESSION", list[0]["code"], src)
		require.Contains(t, list[0]["message"], want, src)
	}
	require.Zero(t, b.rows(t, "triggers"), "nothing refused was stored")
}

func longExpr() string {
	s := "event.id"
	for len(s) <= 4096 {
		s += " + event.id"
	}
	return s
}

// TestInputExpressionFailingOnAnEvent refuses the event, names the
// failure, and starts nothing; a later event it fits starts its run.
func TestInputExpressionFailingOnAnEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, trigger.Config{}, intake.Config{})
	_, _, err := b.svc.Create(t.Context(), op, withInput("orders", "event.payload.order.id"))
	require.NoError(t, err)
	written := func() [2]int { return [2]int{b.rows(t, "run_requests"), b.rows(t, "run_events")} }
	before := written()
	for payload, want := range map[string]string{
		`{"order": 4711}`:         "no such key: id",
		`{"shipment": {"id": 1}}`: "no such key: order",
		``:                        "no such key: order",
	} {
		_, _, err := b.svc.Send(t.Context(), op, "orders", trigger.Event{ID: ptr("evt_1"), Payload: json.RawMessage(payload)})
		e := intaketest.RequireRefused(t, err, api.CodeInvalidArgument, "payload")
		require.Equal(t, trigger.CodeExpressionError, e.Details["code"], payload)
		require.Contains(t, e.Message, want, payload)
	}
	require.Equal(t, before, written(), "a refused event writes nothing")

	res, created, err := b.svc.Send(t.Context(), op, "orders", trigger.Event{ID: ptr("evt_1"), Payload: json.RawMessage(`{"order": {"id": 7}}`)})
	require.NoError(t, err)
	require.True(t, created, "the refused deliveries claimed no run request")
	require.JSONEq(t, `7`, b.runInput(t, res.RunID))
}
