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

// A trigger keeps its refused events, newest first, up to
// api.MaxTriggerRefusals, with their count: a refused event starts
// nothing, and this is what it leaves. An event of an unknown trigger,
// and an accepted one, leave nothing.
func TestTriggerRecordsItsRefusedEvents(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	a := s.post(t, "/v1/triggers", map[string]any{"triggerId": "typed", "tenantId": "acme", "projectId": "p",
		"environmentId": "dev", "plan": json.RawMessage(typedPlanDoc)})
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	get := func() api.Trigger {
		t.Helper()
		a, err := s.do(t, http.MethodGet, "/v1/triggers/typed", operatorToken, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
		var tr api.Trigger
		require.NoError(t, json.Unmarshal(a.body, &tr))
		return tr
	}
	tr := get()
	require.Zero(t, tr.RefusedEvents)
	require.Empty(t, tr.RecentRefusals)

	for i := range api.MaxTriggerRefusals + 1 {
		a = s.post(t, "/v1/triggers/typed/events", map[string]any{"eventId": fmt.Sprintf("bad-%d", i), "payload": map[string]any{"total": -1}})
		require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	}
	a = s.post(t, "/v1/triggers/typed/events", map[string]any{"eventId": "good", "payload": map[string]any{"total": 3}})
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	a = s.post(t, "/v1/triggers/nope/events", map[string]any{"eventId": "x"})
	require.Equal(t, http.StatusNotFound, a.status, "%s", a.body)

	tr = get()
	require.Equal(t, int64(api.MaxTriggerRefusals+1), tr.RefusedEvents)
	require.Len(t, tr.RecentRefusals, api.MaxTriggerRefusals, "the oldest refusal is dropped")
	newest := tr.RecentRefusals[0]
	require.Equal(t, fmt.Sprintf("bad-%d", api.MaxTriggerRefusals), newest.EventID, "newest first")
	require.Equal(t, api.CodeInvalidArgument, newest.Code)
	require.Contains(t, newest.Message, "input.total")
	require.False(t, newest.At.IsZero())
	require.Equal(t, "bad-1", tr.RecentRefusals[api.MaxTriggerRefusals-1].EventID)
}
