package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/cli"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// reusedFrom is the run step id of v copied its outcome from, "" when it
// ran in v.
func reusedFrom(v *api.RunView, id string) string {
	for _, s := range v.Steps {
		if s.StepID == id && s.ReusedFrom != nil {
			return s.ReusedFrom.RunID
		}
	}
	return ""
}

// `weft run rerun RUN_ID --from STEP` starts a new run of the run's plan
// version in which STEP and its descendants run anew and the other steps'
// outcomes are copied; --wait follows it; a repeat of --run-request-id
// (or of its deprecated name --request-id) starts nothing; `weft run get` names the source and marks the reused steps;
// what the gateway refuses is reported with its message.
func TestCLIRerun(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t)
	r := s.weft(t, "run", "start", "-f", example("data-flow.yaml"), "--wait", "-o", "json",
		"--input", `{"customer": "Ada", "items": [{"sku": "tea", "qty": 2}, {"sku": "cake", "qty": 1}]}`)
	require.Equal(t, cli.ExitOK, r.code, "err: %v\nstderr: %s", r.err, r.errOut)
	src := decode[api.RunView](t, r).RunID
	const bob = `{"customer": "Bob", "items": [{"sku": "jam", "qty": 1}]}`

	// From receipt: order is reused, so the new input does not reach it.
	r = s.weft(t, "run", "rerun", src, "--from", "receipt", "--input", bob, "--wait", "-o", "json")
	require.Equal(t, cli.ExitOK, r.code, "err: %v\nstderr: %s", r.err, r.errOut)
	fromReceipt := decode[api.RunView](t, r)
	require.NotEqual(t, src, fromReceipt.RunID)
	require.Equal(t, events.RunStatusCompleted, fromReceipt.Status)
	require.Equal(t, &events.RunRerun{RunID: src, FromStepID: "receipt"}, fromReceipt.RerunOf)
	require.JSONEq(t, `"Ada ordered tea, cake"`, string(fromReceipt.Output), "receipt reads order's reused output")
	require.Equal(t, src, reusedFrom(&fromReceipt, "order"))
	require.Equal(t, src, reusedFrom(&fromReceipt, "gift-wrap"), "a skip is reused too")
	require.Empty(t, reusedFrom(&fromReceipt, "receipt"))

	text := s.weft(t, "run", "get", fromReceipt.RunID)
	require.NoError(t, text.err, text.errOut)
	require.Regexp(t, `^Rerun of +run `+src+` from step receipt$`, strings.TrimSpace(rowOf(text.out, "Rerun")))
	require.Contains(t, rowOf(text.out, "order"), "SUCCESS (reused from run "+src+")")
	require.NotContains(t, rowOf(text.out, "receipt"), "reused")
	plain := s.weft(t, "run", "get", src)
	require.NoError(t, plain.err, plain.errOut)
	require.Empty(t, rowOf(plain.out, "Rerun"), "a run that is no rerun names no source")

	// From order, with the input from a file: every step sees it.
	file := filepath.Join(t.TempDir(), "bob.json")
	require.NoError(t, os.WriteFile(file, []byte(bob), 0o600))
	args := []string{"run", "rerun", src, "--from", "order", "--input", "@" + file}
	r = s.weft(t, append(args, "--run-request-id", "rerun-bob")...)
	require.Equal(t, cli.ExitOK, r.code, "err: %v\nstderr: %s", r.err, r.errOut)
	require.Contains(t, r.out, "a rerun of run "+src+" from step order.")
	require.Contains(t, r.out, "Follow it: weft run watch ")
	require.NotContains(t, r.errOut, "deprecated")
	again := s.weft(t, append(args, "--request-id", "rerun-bob", "-o", "json")...)
	require.Equal(t, cli.ExitOK, again.code, "err: %v\nstderr: %s", again.err, again.errOut)
	require.Contains(t, again.errOut, "--request-id is deprecated: use --run-request-id")
	dup := decode[api.StartRunResult](t, again)
	require.True(t, dup.Duplicate)
	require.Contains(t, r.out, "Started run "+dup.RunID+",", "a repeat answers the first rerun's run")
	v := s.waitFor(t, dup.RunID, "the rerun from order ends", func(v *api.RunView) bool { return v.Status.Terminal() })
	require.JSONEq(t, `"Bob ordered jam"`, string(v.Output))
	require.Empty(t, reusedFrom(v, "order"))

	// Refusals, with the gateway's message.
	waiting := s.weft(t, "run", "start", "-f", example("approval.yaml"), "-o", "json")
	require.Equal(t, cli.ExitOK, waiting.code, "err: %v\nstderr: %s", waiting.err, waiting.errOut)
	running := decode[api.StartRunResult](t, waiting).RunID
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "rerun", src, "--from", "nope"}, `plan has no step "nope"`},
		{[]string{"run", "rerun", running, "--from", "build"}, "RerunRefused"},
		{[]string{"run", "rerun", running, "--from", "build"}, "a run is rerun once it has ended"},
		{[]string{"run", "rerun", src}, "no step: pass --from STEP"},
		{[]string{"run", "rerun", src, "--from", "order", "--input", "{nope"}, "--input is not JSON"},
		{[]string{"run", "rerun", "--from", "order"}, "want RUN_ID"},
	} {
		r := s.weft(t, c.args...)
		require.Equal(t, cli.ExitError, r.code, "weft %v: %v", c.args, r.err)
		require.ErrorContains(t, r.err, c.want, "weft %v", c.args)
	}
}
