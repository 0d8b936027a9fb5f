package trigger_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
	"github.com/weftrun/weft/services/signal-gateway/internal/trigger"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// op is an operator of tenant acme; viewer may only read; other is of
// another tenant.
var op, viewer, other = intaketest.Operator, intaketest.Viewer, intaketest.Stranger

const planDoc = `{"planId":"on-order","planVersion":"1","steps":[{"id":"a","activity":"echo"}]}`

// bundle is a Service over a fresh database, with the clock it and its
// intake read.
type bundle struct {
	db  *weftest.DB
	clk *intaketest.Clock
	in  *intake.Intake
	svc *trigger.Service
}

// setup starts at 09:00 on 2 March 2026, UTC.
func setup(t *testing.T, cfg trigger.Config, in intake.Config) *bundle {
	t.Helper()
	b := &bundle{db: weftest.NewDB(t), clk: intaketest.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))}
	in.Now, cfg.Now = b.clk.Now, b.clk.Now
	b.in = intaketest.New(t, b.db, in)
	var err error
	b.svc, err = trigger.New(b.db.Pool, b.in, nil, auth.RoleAuthorizer{}, cfg)
	require.NoError(t, err)
	return b
}

func request(id string) api.TriggerRequest {
	return api.TriggerRequest{TriggerID: id, TenantID: "acme", ProjectID: "p", EnvironmentID: "dev", Plan: json.RawMessage(planDoc)}
}

func (b *bundle) rows(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM `+table).Scan(&n))
	return n
}

func ptr(s string) *string { return &s }

// runInput is the input recorded in the RunApproved of run id.
func (b *bundle) runInput(t *testing.T, runID string) string {
	t.Helper()
	var raw []byte
	require.NoError(t, b.db.Pool.QueryRow(t.Context(),
		`SELECT coalesce(event_data->'input', 'null'::jsonb) FROM run_events WHERE run_id = $1 AND run_seq = 1`,
		runID).Scan(&raw))
	return string(raw)
}

func TestTriggerCRUD(t *testing.T) {
	t.Parallel()
	b := setup(t, trigger.Config{}, intake.Config{})
	tr, created, err := b.svc.Create(t.Context(), op, request("orders"))
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "on-order", tr.PlanID)
	again, created, err := b.svc.Create(t.Context(), op, request("orders"))
	require.NoError(t, err)
	require.False(t, created, "the same definition again")
	require.Equal(t, tr, again)
	changed := request("orders")
	changed.EnvironmentID = "prod"
	_, _, err = b.svc.Create(t.Context(), op, changed)
	intaketest.RequireRefused(t, err, api.CodeAlreadyExists, "")

	for _, bad := range []api.TriggerRequest{
		{TriggerID: "a:b", TenantID: "acme", ProjectID: "p", EnvironmentID: "dev", Plan: json.RawMessage(planDoc)},
		{TriggerID: strings.Repeat("t", 65), TenantID: "acme", ProjectID: "p", EnvironmentID: "dev", Plan: json.RawMessage(planDoc)},
	} {
		_, _, err = b.svc.Create(t.Context(), op, bad)
		intaketest.RequireRefused(t, err, api.CodeInvalidArgument, "triggerId")
	}
	noPlan := request("x")
	noPlan.Plan = nil
	_, _, err = b.svc.Create(t.Context(), op, noPlan)
	intaketest.RequireRefused(t, err, api.CodeInvalidArgument, "plan")
	_, _, err = b.svc.Create(t.Context(), viewer, request("y"))
	intaketest.RequireRefused(t, err, api.CodePermissionDenied, "")
	require.Equal(t, 1, b.rows(t, "triggers"), "nothing refused was stored")

	gen, _, err := b.svc.Create(t.Context(), op, request(""))
	require.NoError(t, err)
	require.Len(t, gen.TriggerID, 36)
	list, err := b.svc.List(t.Context(), viewer, "", 1)
	require.NoError(t, err)
	require.Len(t, list.Triggers, 1)
	require.Nil(t, list.Triggers[0].Plan)
	list, err = b.svc.List(t.Context(), viewer, list.NextCursor, 1)
	require.NoError(t, err)
	require.Len(t, list.Triggers, 1)
	require.Empty(t, list.NextCursor)

	_, err = b.svc.Get(t.Context(), other, "orders")
	intaketest.RequireRefused(t, err, api.CodeNotFound, "")
	require.NoError(t, b.svc.Delete(t.Context(), op, "orders"))
	intaketest.RequireRefused(t, b.svc.Delete(t.Context(), op, "orders"), api.CodeNotFound, "")
	_, _, err = b.svc.Send(t.Context(), op, "orders", trigger.Event{ID: ptr("e1")})
	intaketest.RequireRefused(t, err, api.CodeNotFound, "")
}

// TestEventDedupe: the run request id is {triggerId}:{eventId}; a
// redelivery answers the first run with Duplicate and starts nothing; an
// event without an id is given one, returned to the sender.
func TestEventDedupe(t *testing.T) {
	t.Parallel()
	b := setup(t, trigger.Config{}, intake.Config{})
	_, _, err := b.svc.Create(t.Context(), op, request("orders"))
	require.NoError(t, err)
	ev := trigger.Event{ID: ptr("evt_1"), Payload: json.RawMessage(`{"order":4711}`)}
	first, created, err := b.svc.Send(t.Context(), op, "orders", ev)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "orders:evt_1", first.RunRequestID)
	require.Equal(t, "evt_1", first.EventID)
	require.False(t, first.Duplicate)
	events := b.rows(t, "run_events")

	again, created, err := b.svc.Send(t.Context(), op, "orders", ev)
	require.NoError(t, err)
	require.False(t, created)
	require.True(t, again.Duplicate)
	require.Equal(t, first.RunID, again.RunID)
	require.Equal(t, events, b.rows(t, "run_events"), "a redelivery starts nothing")

	require.JSONEq(t, `{"order": 4711}`, b.runInput(t, first.RunID), "the payload is the run's input")

	assigned, created, err := b.svc.Send(t.Context(), op, "orders", trigger.Event{})
	require.NoError(t, err)
	require.True(t, created)
	require.Len(t, assigned.EventID, 36, "a UUIDv7 assigned at ingress")
	require.Equal(t, "orders:"+assigned.EventID, assigned.RunRequestID)

	_, _, err = b.svc.Send(t.Context(), other, "orders", ev)
	intaketest.RequireRefused(t, err, api.CodeNotFound, "")
	_, _, err = b.svc.Send(t.Context(), viewer, "orders", trigger.Event{ID: ptr("evt_2")})
	intaketest.RequireRefused(t, err, api.CodePermissionDenied, "")
}

// TestEventLimits: eventId and payload, each at its edge.
func TestEventLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, trigger.Config{MaxPayloadBytes: 50}, intake.Config{})
	_, _, err := b.svc.Create(t.Context(), op, request("orders"))
	require.NoError(t, err)
	payload := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("p", n-2) + `"`) }
	before := b.rows(t, "run_requests")
	for _, tc := range []struct {
		ev          trigger.Event
		code, field string
	}{
		{trigger.Event{ID: ptr("")}, api.CodeInvalidArgument, "eventId"},
		{trigger.Event{ID: ptr("has space")}, api.CodeInvalidArgument, "eventId"},
		{trigger.Event{ID: ptr(strings.Repeat("e", 64))}, api.CodeInvalidArgument, "eventId"},
		{trigger.Event{ID: ptr("big"), Payload: payload(51)}, api.CodePayloadTooLarge, "payload"},
	} {
		_, _, err := b.svc.Send(t.Context(), op, "orders", tc.ev)
		intaketest.RequireRefused(t, err, tc.code, tc.field)
	}
	_, _, err = b.svc.Send(t.Context(), op, "bad.id", trigger.Event{})
	intaketest.RequireRefused(t, err, api.CodeInvalidArgument, "triggerId")
	require.Equal(t, before, b.rows(t, "run_requests"), "nothing refused was written")

	_, created, err := b.svc.Send(t.Context(), op, "orders", trigger.Event{ID: ptr(strings.Repeat("e", 63)), Payload: payload(50)})
	require.NoError(t, err)
	require.True(t, created, "both at their limits")
}

// TestEventDedupeLastsTheRetention: the dedupe is the run-request
// record's, kept for the gateway's RunRequestRetention (here an hour), not
// a fixed window.
func TestEventDedupeLastsTheRetention(t *testing.T) {
	t.Parallel()
	b := setup(t, trigger.Config{}, intake.Config{RunRequestRetention: time.Hour})
	_, _, err := b.svc.Create(t.Context(), op, request("orders"))
	require.NoError(t, err)
	ev := trigger.Event{ID: ptr("evt_1")}
	first, _, err := b.svc.Send(t.Context(), op, "orders", ev)
	require.NoError(t, err)

	b.clk.Add(59 * time.Minute)
	again, _, err := b.svc.Send(t.Context(), op, "orders", ev)
	require.NoError(t, err)
	require.True(t, again.Duplicate, "within the retention")
	require.Equal(t, first.RunID, again.RunID)

	b.clk.Add(2 * time.Minute)
	n, err := b.in.ExpiredDelete(t.Context(), 100)
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the retention job removed the record")
	late, created, err := b.svc.Send(t.Context(), op, "orders", ev)
	require.NoError(t, err)
	require.True(t, created, "after the retention the event is new")
	require.NotEqual(t, first.RunID, late.RunID)
}
