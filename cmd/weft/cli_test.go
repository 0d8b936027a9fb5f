package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/cli"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/weftest"
)

// cliTestToken is the dev token startDev gives the stack.
const cliTestToken = "weft_dev_test_token"

// cliStep bounds one CLI command against the dev stack: runs take a few
// seconds on a loaded machine, and a failure should still come well
// before the test's timeout.
const cliStep = 2 * time.Minute

// cliStack is a `weft dev` stack that CLI commands run against.
type cliStack struct {
	db     *weftest.DB
	env    map[string]string
	client *client.Client
	logs   *weftest.Buffer // the dev stack's stderr: its JSON log lines
}

// startCLIStack starts `weft dev` (no demo run) and returns the
// environment that points the CLI at it, and a client of it for the
// test's own conditions.
func startCLIStack(t *testing.T) *cliStack {
	t.Helper()
	db := weftest.NewDB(t)
	dev := startDev(t, db, "false")
	apiURL := bannerURL(t, dev.out.String(), "API:")
	readURL := strings.TrimSuffix(bannerURL(t, dev.out.String(), "Read API:"), "/v1/runs")
	c, err := client.New(apiURL, client.WithToken(cliTestToken), client.WithReadURL(readURL))
	require.NoError(t, err)
	return &cliStack{
		db:     db,
		env:    map[string]string{"WEFT_API_URL": apiURL, "WEFT_READ_URL": readURL, "WEFT_TOKEN": cliTestToken},
		client: c,
		logs:   dev.errOut,
	}
}

// cliResult is what one weft command did.
type cliResult struct {
	out, errOut string
	err         error
	code        int
}

// weft runs the weft command args with env and returns what it did.
func weft(t *testing.T, env map[string]string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliStep)
	defer cancel()
	var out, errOut weftest.Buffer
	err := run(ctx, args, &out, &errOut, envOf(env))
	return cliResult{out: out.String(), errOut: errOut.String(), err: err, code: cli.ExitCode(err)}
}

// weft runs a weft command against the stack.
func (s *cliStack) weft(t *testing.T, args ...string) cliResult {
	t.Helper()
	return weft(t, s.env, args...)
}

// decode parses a command's JSON output into a T.
func decode[T any](t *testing.T, r cliResult) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(r.out), &v), "stdout: %s\nstderr: %s", r.out, r.errOut)
	return v
}

// waitFor follows the run with the client until cond holds of its view.
func (s *cliStack) waitFor(t *testing.T, runID, what string, cond func(*api.RunView) bool) *api.RunView {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliStep)
	defer cancel()
	var seq int64
	for {
		v, err := s.client.WaitRun(ctx, runID, seq)
		require.NoError(t, err, "waiting until %s", what)
		if cond(v) {
			return v
		}
		seq = v.LastEventSeq
	}
}

// stepStatus is the status of the run's step id, "" before it has one.
func stepStatus(v *api.RunView, id string) events.StepStatus {
	for _, s := range v.Steps {
		if s.StepID == id {
			return s.Status
		}
	}
	return ""
}

// example is the path of an example plan from this package's folder.
func example(name string) string { return filepath.Join("..", "..", "examples", name) }

// Every example plan parses, and the examples' README names each one.
func TestExamplesParse(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(example("*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 9)
	readme, err := os.ReadFile(example("README.md"))
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		_, err = plan.Parse(data, plan.Limits{})
		require.NoError(t, err, f)
		require.Contains(t, string(readme), "weft run start -f examples/"+filepath.Base(f), "README shows how to run %s", f)
	}
}

// The CLI end to end against one in-process `weft dev` stack, shared by
// the subtests.
func TestCLIAgainstTheDevStack(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t)
	t.Run("examples run to completion", func(t *testing.T) { testExamplesComplete(t, s) })
	t.Run("approval gate", func(t *testing.T) { testApprovalGate(t, s) })
	t.Run("pause and cancel", func(t *testing.T) { testPauseCancel(t, s) })
	t.Run("failing plan", func(t *testing.T) { testFailingPlan(t, s) })
	t.Run("reads", func(t *testing.T) { testReads(t, s) })
	t.Run("data flow", func(t *testing.T) { testDataFlow(t, s) })
	t.Run("order pipeline", func(t *testing.T) { testOrderPipeline(t, s) })
	t.Run("child runs", func(t *testing.T) { testChildRuns(t, s) })
	t.Run("bad input", func(t *testing.T) { testBadInput(t, s) })
	t.Run("dev token file", func(t *testing.T) { testDevTokenFile(t, s) })
}

// data-flow's run input reaches its first step, whose output reaches the
// second, as the example's README says.
func testDataFlow(t *testing.T, s *cliStack) {
	t.Parallel()
	r := s.weft(t, "run", "start", "-f", example("data-flow.yaml"), "--wait", "-o", "json",
		"--input", `{"customer": "Ada", "items": [{"sku": "tea", "qty": 2}, {"sku": "cake", "qty": 1}]}`)
	require.Equal(t, cli.ExitOK, r.code, "err: %v\nstderr: %s", r.err, r.errOut)
	v := decode[api.RunView](t, r)
	require.Equal(t, events.RunStatusCompleted, v.Status)
	require.JSONEq(t, `"Ada ordered tea, cake"`, string(v.Output), "the plan's output")
	text := s.weft(t, "run", "get", v.RunID)
	require.NoError(t, text.err)
	require.Contains(t, text.out, `Output  "Ada ordered tea, cake"`)
	page := decode[api.EventPage](t, s.weft(t, "run", "events", v.RunID, "-o", "json"))
	outputs := map[string]string{}
	for _, e := range page.Events {
		switch e.EventType {
		case events.StepCompleted:
			var d events.StepCompletedData
			require.NoError(t, e.Data(&d))
			outputs[e.StepID] = string(d.Output)
		case events.StepSkipped:
			var d events.StepSkippedData
			require.NoError(t, e.Data(&d))
			outputs[e.StepID] = d.Reason
		default:
		}
	}
	require.Equal(t, "CONDITION_FALSE", outputs["gift-wrap"], "no gift asked for")
	require.JSONEq(t, `{"customer": "Ada", "skus": ["tea", "cake"], "lines": 2}`, outputs["order"])
	require.JSONEq(t, `{"line": "Ada ordered tea, cake", "run": "`+v.RunID+`"}`, outputs["receipt"])
}

// hello, fan-out and retry run to COMPLETED under --wait -o json, exit 0,
// print the final view as JSON and the progress on stderr.
func testExamplesComplete(t *testing.T, s *cliStack) {
	t.Parallel()
	for name, steps := range map[string]int{"hello.yaml": 3, "fan-out.yaml": 6, "retry.yaml": 3} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := s.weft(t, "run", "start", "-f", example(name), "--wait", "-o", "json")
			require.Equal(t, cli.ExitOK, r.code, "err: %v\nstderr: %s", r.err, r.errOut)
			v := decode[api.RunView](t, r)
			require.Equal(t, events.RunStatusCompleted, v.Status)
			require.Equal(t, steps, v.StepsTotal())
			require.Equal(t, steps, v.StepsDone())
			require.Contains(t, r.errOut, "COMPLETED", "progress goes to stderr under -o json")
			if name == "retry.yaml" {
				for _, st := range v.Steps {
					if st.StepID == "flaky" {
						require.Equal(t, "3", st.LogicalAttemptID, "two failures, then success")
					}
				}
				requireTracedLog(t, s.logs.String(), v.RunID, "worker: step failed")
			}
		})
	}
}

// requireTracedLog requires a JSON log line of the dev stack with msg for
// runID that carries the trace and span ids of the span it was logged in.
func requireTracedLog(t *testing.T, logs, runID, msg string) {
	t.Helper()
	for line := range strings.Lines(logs) {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != msg || rec["run_id"] != runID {
			continue
		}
		require.Len(t, rec["trace_id"], 32, "%s", line)
		require.Len(t, rec["span_id"], 16, "%s", line)
		return
	}
	require.Failf(t, "no log line", "%q for run %s in:\n%s", msg, runID, logs)
}

// The approval gate waits until `weft signal ID approve`, then completes.
func testApprovalGate(t *testing.T, s *cliStack) {
	t.Parallel()
	r := s.weft(t, "run", "start", "-f", example("approval.yaml"), "-o", "json")
	require.NoError(t, r.err, r.errOut)
	started := decode[api.StartRunResult](t, r)
	require.False(t, started.Duplicate)
	s.waitFor(t, started.RunID, "the gate waits", func(v *api.RunView) bool {
		return stepStatus(v, "gate") == events.StepStatusRunning
	})
	got := s.weft(t, "run", "get", started.RunID)
	require.NoError(t, got.err)
	require.Contains(t, got.out, "waits for signal approve")
	late := s.weft(t, "run", "watch", started.RunID, "--timeout", "100ms")
	require.Equal(t, cli.ExitTimeout, late.code, "the gate waits for the signal: err %v", late.err)
	require.Contains(t, late.out, "running: gate (waits for signal approve)")

	r = s.weft(t, "signal", started.RunID, "approve", "--payload", `{"by":"cli-test"}`, "--signal-id", "approve-1", "-o", "json")
	require.NoError(t, r.err, r.errOut)
	acc := decode[api.AcceptedSignalResult](t, r)
	require.True(t, acc.Accepted)
	require.Equal(t, "approve-1", acc.SignalID)

	r = s.weft(t, "run", "watch", started.RunID, "-o", "json")
	require.Equal(t, cli.ExitOK, r.code, "err: %v", r.err)
	v := decode[api.RunView](t, r)
	require.Equal(t, events.RunStatusCompleted, v.Status)
	require.Equal(t, events.StepStatusSuccess, stepStatus(&v, "ship"))
}

// The long example pauses on PAUSE; after CANCEL, watch exits with the
// CANCELLED code.
func testPauseCancel(t *testing.T, s *cliStack) {
	t.Parallel()
	r := s.weft(t, "run", "start", "-f", example("long.yaml"), "-o", "json")
	require.NoError(t, r.err, r.errOut)
	runID := decode[api.StartRunResult](t, r).RunID
	s.waitFor(t, runID, "the first step runs", func(v *api.RunView) bool {
		return stepStatus(v, "step-1") == events.StepStatusRunning
	})
	r = s.weft(t, "signal", runID, "PAUSE")
	require.NoError(t, r.err)
	require.Contains(t, r.out, "Signal PAUSE accepted for run "+runID)
	s.waitFor(t, runID, "the run pauses", func(v *api.RunView) bool { return v.Status == events.RunStatusPaused })
	got := decode[api.RunView](t, s.weft(t, "run", "get", runID, "-o", "json"))
	require.Equal(t, events.RunStatusPaused, got.Status)

	require.NoError(t, s.weft(t, "signal", runID, "CANCEL").err)
	r = s.weft(t, "run", "watch", runID)
	require.Equal(t, cli.ExitCancelled, r.code, "err: %v", r.err)
	require.ErrorContains(t, r.err, "CANCELLED")
	require.Contains(t, r.out, "CANCELLED")
}

// A plan whose step fails for good exits with the FAILED code, and its
// progress, away from a terminal, is plain lines.
func testFailingPlan(t *testing.T, s *cliStack) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "fails.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`planId: fails
planVersion: "1"
steps:
  - id: first
    activity: sleep
    input: {ms: 1500}
  - id: doomed
    activity: fail-n-times
    dependsOn: [first]
    input: {times: 5}
    retry: {maxAttempts: 1}
`), 0o600))
	// first sleeps so that the CLI sees the run running before it fails,
	// however fast the stack: at least two states, two lines.
	r := s.weft(t, "run", "start", "-f", file, "--wait")
	require.Equal(t, cli.ExitFailed, r.code, "err: %v\nstdout: %s", r.err, r.out)
	require.ErrorContains(t, r.err, "FAILED")
	require.ErrorContains(t, r.err, "PLANNED_FAILURE")
	require.Contains(t, r.out, "Started run ")
	var progress []string
	for line := range strings.Lines(r.out) {
		if strings.Contains(line, "] ") && strings.Contains(line, "/2 ") {
			progress = append(progress, line)
		}
	}
	require.GreaterOrEqual(t, len(progress), 2, "one line per change: %s", r.out)
	require.Contains(t, progress[len(progress)-1], "FAILED")
	require.NotContains(t, r.out, "\r", "no redrawing away from a terminal")
	require.Contains(t, r.out, "doomed", "the final view lists the steps")
}

// get, events and ls give parseable JSON about the right run, with flags
// before or after the run id.
func testReads(t *testing.T, s *cliStack) {
	t.Parallel()
	r := s.weft(t, "run", "start", "-f", example("hello.yaml"), "--wait", "-o", "json", "--run-request-id", "reads-1")
	require.Equal(t, cli.ExitOK, r.code, "err: %v", r.err)
	runID := decode[api.RunView](t, r).RunID

	again := s.weft(t, "run", "start", "-f", example("hello.yaml"), "--run-request-id", "reads-1", "-o", "json")
	require.NoError(t, again.err)
	dup := decode[api.StartRunResult](t, again)
	require.True(t, dup.Duplicate)
	require.Equal(t, runID, dup.RunID)

	for _, args := range [][]string{{"run", "get", runID, "-o", "json"}, {"run", "get", "-o", "json", runID}} {
		v := decode[api.RunView](t, s.weft(t, args...))
		require.Equal(t, runID, v.RunID, "%v", args)
		require.Equal(t, events.RunStatusCompleted, v.Status)
		require.Equal(t, "hello", v.PlanID)
	}
	text := s.weft(t, "run", "get", runID)
	require.NoError(t, text.err)
	for _, want := range []string{runID, "COMPLETED", "3/3 steps done", "greet", "shout", "wave"} {
		require.Contains(t, text.out, want)
	}

	page := decode[api.EventPage](t, s.weft(t, "run", "events", runID, "-o", "json"))
	require.False(t, page.More)
	require.NotEmpty(t, page.Events)
	for i, e := range page.Events {
		require.Equal(t, runID, e.RunID)
		require.Equal(t, int64(i+1), e.RunSeq)
	}
	require.Equal(t, events.RunApproved, page.Events[0].EventType)
	require.Equal(t, events.RunCompleted, page.Events[len(page.Events)-1].EventType)
	tail := decode[api.EventPage](t, s.weft(t, "run", "events", "--after-seq", "2", runID, "-o", "json"))
	require.Len(t, tail.Events, len(page.Events)-2)

	second := s.weft(t, "run", "start", "-f", example("hello.yaml"), "--run-request-id", "reads-2", "-o", "json")
	require.NoError(t, second.err)
	secondID := decode[api.StartRunResult](t, second).RunID
	s.waitFor(t, secondID, "the read API knows the second run", func(*api.RunView) bool { return true })
	first := decode[api.RunList](t, s.weft(t, "runs", "ls", "--plan", "hello", "--limit", "1", "-o", "json"))
	require.Len(t, first.Runs, 1)
	require.NotEmpty(t, first.NextCursor)
	next := decode[api.RunList](t, s.weft(t, "runs", "ls", "--plan", "hello", "--limit", "1", "--cursor", first.NextCursor, "-o", "json"))
	require.Len(t, next.Runs, 1)
	require.NotEqual(t, first.Runs[0].RunID, next.Runs[0].RunID, "the cursor moves on")
	page1 := s.weft(t, "runs", "ls", "--plan", "hello", "--limit", "1")
	require.NoError(t, page1.err)
	require.Contains(t, page1.out, "More: weft runs ls --plan hello --limit 1 --cursor ")

	list := decode[api.RunList](t, s.weft(t, "runs", "ls", "--plan", "hello", "-o", "json"))
	require.True(t, containsRun(list.Runs, secondID), "%+v", list.Runs)
	list = decode[api.RunList](t, s.weft(t, "runs", "ls", "--plan", "hello", "--status", "COMPLETED", "-o", "json"))
	require.True(t, containsRun(list.Runs, runID), "%+v", list.Runs)
	none := decode[api.RunList](t, s.weft(t, "runs", "ls", "--plan", "no-such-plan", "-o", "json"))
	require.Empty(t, none.Runs)
	ls := s.weft(t, "runs", "ls", "--plan", "hello")
	require.NoError(t, ls.err)
	require.Contains(t, ls.out, runID)
}

func containsRun(runs []api.RunSummary, runID string) bool {
	for _, r := range runs {
		if r.RunID == runID {
			return true
		}
	}
	return false
}

// Bad input fails with exit code 1 and says what is wrong.
func testBadInput(t *testing.T, s *cliStack) {
	t.Parallel()
	badPlan := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(badPlan, []byte("planId: bad\nplanVersion: \"1\"\nsteps:\n  - id: a\n    dependsOn: [nope]\n"), 0o600))
	const unknownRun = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	unreachable := map[string]string{"WEFT_TOKEN": cliTestToken, "WEFT_READ_URL": "http://127.0.0.1:1"}
	cases := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{s.env, []string{"run", "start"}, "no plan: pass -f PLAN_FILE"},
		{s.env, []string{"run", "start", "-f", filepath.Join(t.TempDir(), "missing.yaml")}, "read the plan"},
		{s.env, []string{"run", "start", "-f", badPlan}, "is not a valid plan"},
		{s.env, []string{"run", "start", "-f", badPlan}, "UNKNOWN_DEPENDENCY"},
		{s.env, []string{"run", "start", "-f", example("hello.yaml"), "--input", "{nope"}, "--input is not JSON"},
		{s.env, []string{"signal", unknownRun, "approve", "--payload", "{nope"}, "--payload is not JSON"},
		{s.env, []string{"signal", unknownRun}, "want RUN_ID and NAME"},
		{s.env, []string{"signal", unknownRun, "approve"}, "no run " + unknownRun},
		{s.env, []string{"run", "get", unknownRun}, "no run " + unknownRun},
		{s.env, []string{"run", "watch", unknownRun}, "no run " + unknownRun},
		{s.env, []string{"run", "events", unknownRun}, "no run " + unknownRun},
		{s.env, []string{"run", "get"}, "want RUN_ID"},
		{s.env, []string{"run", "get", unknownRun, "-o", "yaml"}, `-o "yaml": want text or json`},
		{s.env, []string{"run", "get", "not-a-uuid"}, "lowercase UUID"},
		{s.env, []string{"run", "stop"}, `run: unknown command "stop"`},
		{s.env, []string{"runs", "ls", "--status", "DONE"}, `status "DONE"`},
		{unreachable, []string{"run", "get", unknownRun}, "is Weft up?"},
	}
	for _, c := range cases {
		r := weft(t, c.env, c.args...)
		require.Equal(t, cli.ExitError, r.code, "weft %v: %v", c.args, r.err)
		require.ErrorContains(t, r.err, c.want, "weft %v", c.args)
	}
}

// Without --token or WEFT_TOKEN the CLI reads the token `weft dev` wrote,
// and says where it looked when there is none.
func testDevTokenFile(t *testing.T, s *cliStack) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"WEFT_API_URL": s.env["WEFT_API_URL"], "WEFT_READ_URL": s.env["WEFT_READ_URL"], "WEFT_DEV_DIR": dir}
	r := weft(t, env, "runs", "ls")
	require.Equal(t, cli.ExitError, r.code)
	require.ErrorContains(t, r.err, "no API token: pass --token or set WEFT_TOKEN")
	require.ErrorContains(t, r.err, filepath.Join(dir, "token"))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "token"), []byte(cliTestToken+"\n"), 0o600))
	r = weft(t, env, "runs", "ls", "-o", "json")
	require.NoError(t, r.err)
	decode[api.RunList](t, r)

	r = weft(t, env, "runs", "ls", "--token", "weft_wrong_token")
	require.Equal(t, cli.ExitError, r.code)
	require.ErrorContains(t, r.err, api.CodeUnauthenticated, "--token wins over the file")
}
