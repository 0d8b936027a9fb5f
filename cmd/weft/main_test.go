package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
)

// asWeftEnv, set in a process a test starts from the test binary
// (weftBinary), makes that process the weft binary: it runs main with its
// arguments instead of the tests, so that a test of what the built binary
// does (its signals, its exit codes) needs no second build of it.
const asWeftEnv = "WEFT_TEST_AS_WEFT"

func TestMain(m *testing.M) {
	if os.Getenv(asWeftEnv) != "" {
		main()
		os.Exit(0)
	}
	weftest.Main(m)
}

// weftBinary returns a command that runs this test binary as the weft
// binary (asWeftEnv) with args, in the environment env adds to this one.
func weftBinary(ctx context.Context, env []string, args ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		panic(err) // the running test binary has a path on every platform Weft tests on
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(append(os.Environ(), asWeftEnv+"=1"), env...)
	return cmd
}

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t) // already migrated by the harness
	var out, errOut weftest.Buffer
	err := run(t.Context(), []string{"migrate"}, &out, &errOut, envOf(map[string]string{"WEFT_DATABASE_URL": db.URL}))
	require.NoError(t, err)
	require.Equal(t, "schema is up to date\n", out.String())
}

func TestCommandErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"nope"}, nil, `unknown command "nope"`},
		{[]string{"migrate"}, nil, "no database: set WEFT_DATABASE_URL"},
		{[]string{"relay", "--database-url", "postgres://x"}, nil, "no NATS server: set WEFT_NATS_URL"},
		{[]string{"engine"}, nil, "no NATS server: set WEFT_NATS_URL"},
		{[]string{"worker", "--concurrency", "2"}, nil, "no NATS server: set WEFT_NATS_URL"},
		{[]string{"worker"}, map[string]string{"WEFT_WORKER_CONCURRENCY": "x"}, `WEFT_WORKER_CONCURRENCY="x"`},
		{[]string{"migrate", "extra"}, nil, "unexpected arguments"},
		{[]string{"dev"}, map[string]string{"WEFT_DEV_NATS_PORT": "many"}, `WEFT_DEV_NATS_PORT="many"`},
		{[]string{"migrate", "--stream-replicas", "0"}, nil, "0 replicas: a stream has 1 to 5"},
		{[]string{"engine", "--stream-replicas", "6"}, nil, "6 replicas: a stream has 1 to 5"},
		{[]string{"relay"}, map[string]string{"WEFT_STREAM_REPLICAS": "three"}, `WEFT_STREAM_REPLICAS="three"`},
		{[]string{"engine", "--event-form", "events"}, nil, `event form "events" is neither "batch" nor "event"`},
		{[]string{"gateway"}, map[string]string{"WEFT_EVENT_FORM": "Batch"}, `WEFT_EVENT_FORM="Batch"`},
	}
	for _, c := range cases {
		var out, errOut weftest.Buffer
		err := run(t.Context(), c.args, &out, &errOut, envOf(c.env))
		require.ErrorContains(t, err, c.want, "weft %v", c.args)
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	t.Parallel()
	var out, errOut weftest.Buffer
	require.NoError(t, run(t.Context(), nil, &out, &errOut, envOf(nil)))
	for name := range commands() {
		require.Contains(t, out.String(), "  "+name+" ")
	}
}

// TestDevRunsDemoToCompletion runs `weft dev` as `make run` does (with the
// test's database instead of a private one): the demo plan is approved,
// driven by the engine, run by the worker, and its events come back from
// JetStream in runSeq order until RunCompleted. Then it stops the stack
// with its context.
func TestDevRunsDemoToCompletion(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	dev := startDev(t, db, "true")
	approveThroughGateway(t, db, bannerURL(t, dev.out.String(), "API:"), "weft_dev_test_token")
	require.NoError(t, dev.stop())
	require.Contains(t, dev.errOut.String(), `"outcome":"RunCompleted"`)
	seqs := relayedSeqs(t, dev.errOut.String())
	require.NotEmpty(t, seqs)
	for i, seq := range seqs {
		require.Equal(t, int64(i+1), seq, "events arrive in runSeq order, none missing")
	}
}

// devStackUnderTest is a `weft dev` running on the test's database.
type devStackUnderTest struct {
	out, errOut *weftest.Buffer
	dir         string // its data folder, WEFT_DEV_DIR
	stop        func() error
}

// startDev runs `weft dev` as `make run` does (with the test's database
// instead of a private one, free ports and the dev token
// weft_dev_test_token) until its banner is printed. demo is WEFT_DEV_DEMO.
// stop stops the stack and returns what weft dev returned; the test's
// cleanup calls it too.
func startDev(t *testing.T, db *weftest.DB, demo string) *devStackUnderTest {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dev := &devStackUnderTest{out: &weftest.Buffer{}, errOut: &weftest.Buffer{}, dir: t.TempDir()}
	env := envOf(map[string]string{
		"WEFT_DATABASE_URL":     db.URL,
		"WEFT_DEV_DIR":          dev.dir,
		"WEFT_DEV_NATS_PORT":    strconv.Itoa(weftest.FreePort(t)),
		"WEFT_DEV_GATEWAY_ADDR": "127.0.0.1:0",
		"WEFT_DEV_UI_ADDR":      "127.0.0.1:0",
		"WEFT_DEV_OPS_ADDR":     "127.0.0.1:0",
		"WEFT_DEV_TOKEN":        "weft_dev_test_token",
		"WEFT_DEV_DEMO":         demo,
	})
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"dev"}, dev.out, dev.errOut, env) }()
	var result error
	stopped := false
	dev.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			result = <-done
		}
		return result
	}
	t.Cleanup(func() { _ = dev.stop() })

	deadline := time.After(time.Minute)
	for !strings.Contains(dev.out.String(), "Weft dev stack is up") {
		select {
		case err := <-done:
			stopped, result = true, err
			t.Fatalf("weft dev exited early: %v\nstderr: %s", err, dev.errOut.String())
		case <-deadline:
			t.Fatalf("weft dev not up within a minute\nstderr: %s", dev.errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return dev
}

// bannerURL reads the value of the banner line that starts with label
// ("API:", "UI:", "NATS:").
func bannerURL(t *testing.T, banner, label string) string {
	t.Helper()
	for line := range strings.Lines(banner) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), label); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("no %s line in %q", label, banner)
	return ""
}

// approveThroughGateway starts a run with an approval gate through the dev
// gateway, with the Go client, approves it with a signal, and waits for
// the run to complete: gateway, outbox relay, engine and worker together.
func approveThroughGateway(t *testing.T, db *weftest.DB, url, token string) {
	t.Helper()
	c, err := client.New(url, client.WithToken(token))
	require.NoError(t, err)
	g := startGated(t, db, c)
	_, err = c.Signal(t.Context(), g.runID, api.SignalRequest{SignalName: "approve", Payload: json.RawMessage(`{"by":"test"}`)})
	require.NoError(t, err)
	g.waitFor(t, "the approved run completes", func(e events.Event) bool { return e.EventType == events.RunCompleted })
}

// gatedRun is a run whose step "gate" waits for the signal "approve".
type gatedRun struct {
	runID string
	log   *eventlog.Store
}

// startGated starts a run of prepare → gate (waits for "approve") → ship
// with c and waits until the gate waits: a signal is applied to a step
// that waits for it at the time; one sent earlier is recorded and ignored
// (docs/engine.md).
func startGated(t *testing.T, db *weftest.DB, c *client.Client) gatedRun {
	t.Helper()
	doc := `{"planId":"approval","planVersion":"1","steps":[{"id":"prepare","activity":"echo","input":{"x":1}},` +
		`{"id":"gate","kind":"waitSignal","signal":"approve","dependsOn":["prepare"]},` +
		`{"id":"ship","activity":"echo","dependsOn":["gate"]}]}`
	run, err := c.StartRun(t.Context(), api.StartRunRequest{TenantID: "default", ProjectID: "demo", EnvironmentID: "dev",
		PlanID: "approval", PlanVersion: "1", Plan: json.RawMessage(doc)})
	require.NoError(t, err)
	g := gatedRun{runID: run.RunID, log: eventlog.New(db.Pool)}
	g.waitFor(t, "the gate waits", func(e events.Event) bool { return e.StepID == "gate" })
	return g
}

// waitFor waits, up to a minute, for an event of the run that want
// accepts.
func (g gatedRun) waitFor(t *testing.T, what string, want func(events.Event) bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		evs, err := g.log.EventsFetchAfter(t.Context(), g.runID, 0, 1000)
		require.NoError(t, err)
		return slices.ContainsFunc(evs, want)
	}, time.Minute, 20*time.Millisecond, what)
}

// relayedSeqs returns the runSeq of every "relayed event" log line, in
// log order.
func relayedSeqs(t *testing.T, logs string) []int64 {
	var seqs []int64
	for line := range strings.Lines(logs) {
		var rec struct {
			Msg    string `json:"msg"`
			RunSeq int64  `json:"run_seq"`
			Type   string `json:"event_type"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if rec.Msg == "relayed event" {
			require.True(t, events.Type(rec.Type).Known(), rec.Type)
			seqs = append(seqs, rec.RunSeq)
		}
	}
	return seqs
}

// `weft -h` and a group's help keep every summary in one column after the
// longest name and every line within helpWidth: a long summary wraps,
// under its start, and none is cut.
func TestHelpIsAlignedAndUncut(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-h"}, {"run", "-h"}, {"schedule", "-h"}, {"trigger", "-h"}} {
		var out, errOut weftest.Buffer
		require.NoError(t, run(t.Context(), args, &out, &errOut, envOf(nil)))
		_, table, ok := strings.Cut(out.String(), "Commands:\n")
		require.True(t, ok)
		table, _, _ = strings.Cut(table, "\n\n")
		column := -1
		var words []string
		for line := range strings.Lines(table) {
			line = strings.TrimSuffix(line, "\n")
			require.LessOrEqual(t, len(line), helpWidth, "weft %v: %q", args, line)
			name, summary, _ := strings.Cut(strings.TrimPrefix(line, "  "), "  ")
			start := len(line) - len(strings.TrimLeft(summary, " "))
			if strings.TrimSpace(name) == "" { // a wrapped summary's next line
				start = len(line) - len(strings.TrimLeft(line, " "))
			}
			if column < 0 {
				column = start
			}
			require.Equal(t, column, start, "weft %v: %q starts its summary elsewhere", args, line)
			words = append(words, strings.Fields(line)...)
		}
		require.Positive(t, column)
		if args[0] == "-h" {
			require.Contains(t, strings.Join(words, " "),
				"signal send a signal to a run: PAUSE, RESUME, CANCEL, RETRY_STEP, or the signal a waitSignal step waits for",
				"a wrapped summary reads whole")
		}
	}
}

// `weft version` prints the version, the module, the VCS revision and the
// Go version from the build info.
func TestVersionText(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Path: "github.com/weftrun/weft", Version: "v1.2.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "3f2a9c"}, {Key: "vcs.time", Value: "2026-11-27T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	require.Equal(t, "weft v1.2.0\n  module    github.com/weftrun/weft v1.2.0\n  revision  3f2a9c (modified) 2026-11-27T10:00:00Z\n  go        go1.25.0\n",
		versionText("dev", bi))
	require.Equal(t, "weft v9\n  module    github.com/weftrun/weft (devel)\n  revision  not stamped (go run, tests and -buildvcs=false stamp none)\n  go        go1.25.0\n",
		versionText("v9", &debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Path: "github.com/weftrun/weft", Version: "(devel)"}}),
		"a version stamped with -ldflags wins; no revision says why")

	var out, errOut weftest.Buffer
	require.NoError(t, run(t.Context(), []string{"version"}, &out, &errOut, envOf(nil)))
	require.Contains(t, out.String(), "\n  go        "+runtime.Version()+"\n", "the real build info")
}
