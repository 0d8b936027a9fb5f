// Package nodeworker_test runs the Node.js worker of this folder against a
// real `weft dev`: the proof that the plain worker protocol
// (docs/worker-protocol.md) is enough for a worker with no Weft code.
package nodeworker_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/examples/internal/devstacktest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// TestNodeWorker installs the worker's pinned dependencies once, with
// `npm ci` in a copy of this folder, and runs it beside a real `weft dev`
// and under the NATS permissions of a deployment's worker user.
func TestNodeWorker(t *testing.T) {
	t.Parallel()
	dir := installWorker(t)
	t.Run("RunsAPlanOnTheDevStack", func(t *testing.T) {
		t.Parallel()
		runsAPlanOnTheDevStack(t, dir)
	})
	t.Run("UnderAWorkerUsersPermissions", func(t *testing.T) {
		t.Parallel()
		underAWorkerUsersPermissions(t, dir)
	})
}

// runsAPlanOnTheDevStack starts the worker beside a real `weft dev` with
// the dev stack's worker credentials (found, as a user's worker finds
// them, in the stack's endpoints.json), and runs plan.yaml: greet on the
// stack's Go worker, then count, which only the Node worker serves, on its
// tenant's lane. The run completes with the Node worker's output, which
// the engine took only because each result carried its task's token; the
// results' keys are the protocol's (pkg/events/testdata/README.md).
func runsAPlanOnTheDevStack(t *testing.T, dir string) {
	s := devstacktest.Start(t)
	logs := startWorker(t, dir, s.Env())

	const text = "one plan, two languages"
	out := s.Weft(t, "run", "start", "-f", "examples/node-worker/plan.yaml", "--input", `{"text": "`+text+`"}`, "--wait", "-o", "json")
	var v struct {
		RunID  string `json:"runId"`
		Status string `json:"status"`
		Output struct {
			Words     int    `json:"words"`
			Longest   string `json:"longest"`
			CountedBy string `json:"countedBy"`
		} `json:"output"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	require.Equal(t, "COMPLETED", v.Status, "node worker:\n%s", logs.String())
	require.Equal(t, 4, v.Output.Words)
	require.Equal(t, "languages", v.Output.Longest)
	require.True(t, strings.HasPrefix(v.Output.CountedBy, "node v"), "the Node worker ran it: %q", v.Output.CountedBy)
	require.Contains(t, logs.String(), `"msg":"worker: attempt ended"`)
	requireProtocolKeys(t, s, v.RunID)
}

// installWorker copies the worker into a temporary folder and runs `npm
// ci` there, with an npm cache of its own in another: nothing is kept
// outside the test's temporary folders. Node.js and npm come from
// .ci/ensure-node, which installs them when they are missing.
func installWorker(t *testing.T) string {
	t.Helper()
	root := devstacktest.Root(t)
	run(t, root, os.Environ(), filepath.Join(root, ".ci", "ensure-node"))
	dir := t.TempDir()
	for _, name := range []string{"worker.mjs", "package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(root, "examples", "node-worker", name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600))
	}
	env := append(os.Environ(), "npm_config_cache="+t.TempDir(), "npm_config_update_notifier=false")
	run(t, dir, env, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	return dir
}

// run runs a command in dir with env and fails the test when it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), devstacktest.Step)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s: %s", name, strings.Join(args, " "), out)
}

// startWorker starts `node worker.mjs` in dir with env (and nothing else of
// the test's environment) and returns its output (JSON log lines). The cleanup stops it with SIGTERM, as Ctrl-C
// does, and requires a clean exit.
func startWorker(t *testing.T, dir string, env []string) *weftest.Buffer {
	t.Helper()
	logs := &weftest.Buffer{}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	cmd := exec.CommandContext(ctx, "node", "worker.mjs")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = devstacktest.Step
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait() // "context canceled" even on exit 0: the status tells
		require.True(t, cmd.ProcessState.Success(), "the Node worker stops cleanly on SIGTERM:\n%s", logs.String())
		require.Contains(t, logs.String(), `"msg":"worker stopped"`)
	})
	return logs
}

// requireProtocolKeys reads the run's results from WEFT_RESULTS, as the
// dev stack's NATS user, and requires that each of the Node worker's
// carries the idempotency key of the event it becomes, bound to its task's
// token as its Nats-Msg-Id (task.Result.MsgID), and a startedAt.
func requireProtocolKeys(t *testing.T, s *devstacktest.Stack, runID string) {
	t.Helper()
	password, err := os.ReadFile(s.Endpoints.NATSPasswordFile)
	require.NoError(t, err)
	nc, err := nats.Connect(s.Endpoints.NATS, nats.UserInfo(s.Endpoints.NATSUser, strings.TrimSpace(string(password))))
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	filter, err := streams.RunResultsFilter(runID)
	require.NoError(t, err)
	cons, err := js.OrderedConsumer(t.Context(), streams.ResultsStream,
		jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	require.NoError(t, err)
	info, err := cons.Info(t.Context())
	require.NoError(t, err)
	batch, err := cons.FetchNoWait(int(info.NumPending))
	require.NoError(t, err)
	kinds := map[task.Kind]bool{}
	for msg := range batch.Messages() {
		var r task.Result
		require.NoError(t, json.Unmarshal(msg.Data(), &r))
		if r.StepID != "count" {
			continue
		}
		want := events.IdempotencyKey(r.RunID, r.StepID, r.LogicalAttemptID, events.Type(r.Kind), "1")
		require.Equal(t, want, r.IdempotencyKey, "%s", msg.Data())
		require.NotEmpty(t, r.Token, "%s", msg.Data())
		require.Equal(t, r.MsgID(), msg.Headers().Get(jetstream.MsgIDHeader))
		require.False(t, r.StartedAt.IsZero(), "%s", msg.Data())
		kinds[r.Kind] = true
	}
	require.NoError(t, batch.Error())
	require.Equal(t, map[task.Kind]bool{task.Started: true, task.Completed: true}, kinds)
}
