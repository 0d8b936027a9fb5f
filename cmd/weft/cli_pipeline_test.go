package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/cli"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// order-pipeline, as examples/README.md runs it: with examples/order.json
// every item is reserved, charged and the gift note written; with a
// declined card the reservations are released and the run still
// completes, since release handles charge's failure.
func testOrderPipeline(t *testing.T, s *cliStack) {
	t.Parallel()
	r := s.weft(t, "run", "start", "-f", example("order-pipeline.yaml"), "--wait", "-o", "json",
		"--input", "@"+example("order.json"))
	require.Equal(t, cli.ExitOK, r.code, "err: %v\nstderr: %s", r.err, r.errOut)
	v := decode[api.RunView](t, r)
	require.Equal(t, events.RunStatusCompleted, v.Status)
	require.JSONEq(t, `{"order": "o-1", "reserved": ["tea", "cake", "jam"], "charged": true, "released": false}`, string(v.Output))
	require.Equal(t, 4, v.StepsTotal(), "a forEach step counts once, not once per element")
	require.Equal(t, 4, v.StepsDone())

	r = s.weft(t, "run", "start", "-f", example("order-pipeline.yaml"), "--wait", "-o", "json",
		"--input", `{"orderId": "o-2", "customer": "Bo", "declineCard": true, "items": [{"sku": "tea", "qty": 1}, {"sku": "jam", "qty": 2}]}`)
	require.Equal(t, cli.ExitOK, r.code, "err: %v\nstderr: %s", r.err, r.errOut)
	v = decode[api.RunView](t, r)
	require.Equal(t, events.RunStatusCompleted, v.Status, "release handles the declined charge")
	require.JSONEq(t, `{"order": "o-2", "reserved": ["tea", "jam"], "charged": false, "released": true}`, string(v.Output))
	page := decode[api.EventPage](t, s.weft(t, "run", "events", v.RunID, "-o", "json"))
	released := map[string]string{}
	for _, e := range page.Events {
		if e.EventType == events.StepCompleted && (e.StepID == "release[0]" || e.StepID == "release[1]") {
			var d events.StepCompletedData
			require.NoError(t, e.Data(&d))
			released[e.StepID] = string(d.Output)
		}
	}
	require.JSONEq(t, `{"sku": "tea", "qty": 1}`, released["release[0]"])
	require.JSONEq(t, `{"sku": "jam", "qty": 2}`, released["release[1]"])
}
