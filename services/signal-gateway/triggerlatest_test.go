package gateway_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"

	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// TestTriggerFollowsLatest: a trigger may follow "latest": each new event
// starts the newest version not archived, and an event is told from a
// redelivery by its eventId alone, so a redelivery after a new version
// was pushed answers the first delivery's run as a duplicate, on every
// transport, and starts nothing; a redelivery with another payload is
// still an IdempotencyConflict.
func TestTriggerFollowsLatest(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	s.push(t, versionDoc("1"), http.StatusCreated)
	a := s.post(t, "/v1/triggers", refTrigger("tracking", api.PlanVersionLatest))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	tr := decodeAs[api.Trigger](t, a.body)
	require.Equal(t, &api.PlanRef{PlanID: "hello", PlanVersion: api.PlanVersionLatest}, tr.PlanRef)
	require.Equal(t, api.PlanVersionLatest, tr.PlanVersion)

	send := func(eventID string, n int) answer {
		return s.post(t, "/v1/triggers/tracking/events", map[string]any{"eventId": eventID, "payload": map[string]any{"n": n}})
	}
	requests := func(eventID string) int {
		var n int
		require.NoError(t, s.db.Pool.QueryRow(context.Background(),
			`SELECT count(*) FROM run_requests WHERE run_request_id = $1`, "tracking:"+eventID).Scan(&n))
		return n
	}
	a = send("e1", 1)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	first := decodeAs[api.TriggerEventResult](t, a.body)
	require.False(t, first.Duplicate)
	require.Equal(t, "1", s.approvedPlan(t, first.RunID).PlanVersion)

	s.push(t, versionDoc("2"), http.StatusCreated)
	before := s.counts(t)
	a = send("e1", 1)
	require.Equal(t, http.StatusOK, a.status, "a redelivery after a push: %s", a.body)
	again := decodeAs[api.TriggerEventResult](t, a.body)
	require.True(t, again.Duplicate)
	require.Equal(t, first.RunID, again.RunID, "the first delivery's run")
	require.Equal(t, "true", a.header.Get("Weft-Duplicate"))
	rpc := rpcResult[api.TriggerEventResult](t, s, "trigger.send",
		map[string]any{"triggerId": "tracking", "eventId": "e1", "payload": map[string]any{"n": 1}})
	require.True(t, rpc.Duplicate, "over JSON-RPC too")
	require.Equal(t, first.RunID, rpc.RunID)
	a = send("e1", 2)
	require.Equal(t, http.StatusConflict, a.status, "another payload: %s", a.body)
	e := a.errorBody(t)
	require.Equal(t, api.CodeIdempotencyConflict, e.Code)
	require.Equal(t, first.RunID, e.Details["runId"])
	require.Equal(t, "e1", e.Details["eventId"])
	require.Equal(t, before, s.counts(t), "no redelivery starts or writes anything")
	require.Equal(t, 1, requests("e1"), "one run request for the event")

	a = send("e2", 1)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	second := decodeAs[api.TriggerEventResult](t, a.body)
	require.NotEqual(t, first.RunID, second.RunID)
	require.Equal(t, "2", s.approvedPlan(t, second.RunID).PlanVersion, "a new event starts the newest version")
	require.Equal(t, "1", s.approvedPlan(t, first.RunID).PlanVersion, "the first run is untouched")
}
