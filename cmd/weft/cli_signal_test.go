package main

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/cli"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// signalJSON is what `weft signal -o json` prints: the gateway's
// acceptance with the engine's verdict.
type signalJSON struct {
	api.AcceptedSignalResult
	Verdict *events.SignalAppliedData `json:"verdict"`
}

// TestCLISignalAnswers: `weft signal` says what became of a signal and
// exits non-zero when it can have had no effect: refused by the gateway (a
// name the run has no use for, RETRY_STEP without a stepId, a run that has
// ended), or accepted and then ignored by the engine (RESUME of a run
// that is not PAUSED). An applied signal exits 0 with its verdict;
// --no-wait prints the acceptance alone.
func TestCLISignalAnswers(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t)
	r := s.weft(t, "run", "start", "-f", example("approval.yaml"), "-o", "json")
	require.NoError(t, r.err, r.errOut)
	runID := decode[api.StartRunResult](t, r).RunID
	s.waitFor(t, runID, "the gate waits", func(v *api.RunView) bool {
		return stepStatus(v, "gate") == events.StepStatusRunning
	})

	refused := []struct {
		args []string
		msg  string
	}{
		{[]string{"aprove"}, "run " + runID + " takes no signal named aprove (it takes PAUSE, RESUME, CANCEL, RETRY_STEP, approve); nothing was sent to it"},
		{[]string{"FROBNICATE"}, "takes no signal named FROBNICATE"},
		{[]string{"RETRY_STEP"}, `payload of RETRY_STEP must be {"stepId": "<id>"}`},
		{[]string{"RETRY_STEP", "--payload", `{"stepId":"nope"}`}, `names step "nope", which the run's plan does not have`},
	}
	for _, tc := range refused {
		r := s.weft(t, append([]string{"signal", runID}, tc.args...)...)
		require.Equal(t, cli.ExitError, r.code, "%v: %v", tc.args, r.err)
		require.ErrorContains(t, r.err, tc.msg)
		require.Empty(t, r.out, "nothing accepted")
	}

	r = s.weft(t, "signal", runID, "RESUME")
	require.Equal(t, cli.ExitError, r.code, "an ignored signal fails: %v", r.err)
	require.Contains(t, r.out, "Signal RESUME accepted for run "+runID)
	require.Contains(t, r.out, "Ignored (RUN_NOT_PAUSED): RESUME needs a PAUSED run; the run is RUNNING.")
	require.ErrorContains(t, r.err, "signal RESUME to run "+runID+" was ignored (RUN_NOT_PAUSED)")

	r = s.weft(t, "signal", runID, "PAUSE", "--no-wait", "-o", "json")
	require.NoError(t, r.err, r.errOut)
	require.NotContains(t, r.out, "verdict", "--no-wait waits for no verdict")

	r = s.weft(t, "signal", runID, "RESUME", "-o", "json")
	require.NoError(t, r.err, "RESUME of the paused run: %s", r.errOut)
	answer := decode[signalJSON](t, r)
	require.Equal(t, "RESUME", answer.SignalName)
	require.Equal(t, events.SignalOutcomeApplied, answer.Verdict.Outcome)

	r = s.weft(t, "signal", runID, "approve", "--payload", `{"by":"cli-test"}`)
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "Applied: completed 1 waiting step(s) [steps: gate].")
	s.waitFor(t, runID, "the run completes", func(v *api.RunView) bool { return v.Status == events.RunStatusCompleted })

	r = s.weft(t, "signal", runID, "PAUSE")
	require.Equal(t, cli.ExitError, r.code, "%v", r.err)
	require.ErrorContains(t, r.err, "run "+runID+" has ended COMPLETED: it takes no more signals; nothing was sent to it")

	// Without a read API the verdict cannot be read: the acceptance is
	// printed, and the error says how to skip the wait.
	env := maps.Clone(s.env)
	env["WEFT_READ_URL"] = "http://127.0.0.1:1"
	r = weft(t, env, "run", "start", "-f", example("approval.yaml"), "-o", "json")
	require.NoError(t, r.err, r.errOut)
	other := decode[api.StartRunResult](t, r).RunID
	r = weft(t, env, "signal", other, "CANCEL")
	require.Equal(t, cli.ExitError, r.code, "%v", r.err)
	require.Contains(t, r.out, "Signal CANCEL accepted for run "+other)
	require.ErrorContains(t, r.err, "(--no-wait skips the wait)")
}
