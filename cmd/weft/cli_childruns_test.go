package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/cli"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// The examples' tour of registered plans and child runs (examples/README.md):
// charge is pushed and started by name, a start whose input breaks its
// schema is refused, and checkout runs charge and one notify per address
// as child runs.
func testChildRuns(t *testing.T, s *cliStack) {
	t.Parallel()
	r := s.weft(t, "plan", "push", "-f", example("charge.yaml"))
	require.Equal(t, cli.ExitOK, r.code, "err: %v\nstderr: %s", r.err, r.errOut)

	r = s.weft(t, "run", "start", "--plan", "charge", "--input", `{"orderId": "o-0", "amount": 0}`)
	require.Equal(t, cli.ExitError, r.code)
	require.ErrorContains(t, r.err, "input.amount")
	require.ErrorContains(t, r.err, "minimum")

	r = s.weft(t, "run", "start", "-f", example("checkout.yaml"), "--wait", "-o", "json",
		"--input", `{"orderId": "o-1", "total": 12.5, "emails": ["ada@example.com", "bo@example.com"]}`)
	require.Equal(t, cli.ExitOK, r.code, "err: %v\nstderr: %s", r.err, r.errOut)
	v := decode[api.RunView](t, r)
	require.Equal(t, events.RunStatusCompleted, v.Status)
	require.JSONEq(t, `{"receipt": "r-o-1-1250", "notified": 2}`, string(v.Output))
	var pay events.StepSnapshot
	for _, st := range v.Steps {
		if st.StepID == "pay" {
			pay = st
		}
	}
	require.NotEmpty(t, pay.ChildRunID, "pay names its child run")
	child := decode[api.RunView](t, s.weft(t, "run", "get", pay.ChildRunID, "-o", "json"))
	require.Equal(t, events.RunStatusCompleted, child.Status)
	require.Equal(t, v.RunID, child.Parent.RunID)
	require.Equal(t, "charge", child.PlanID)
}
