// Package devstacktest runs the examples' tests against a real `weft dev`,
// as a user runs the examples: it builds the weft binary, starts `weft dev`
// as a process on a fresh test database with free ports and its own data
// folder, and runs weft commands that find the stack through that folder's
// endpoints.json (docs/cli.md, "Finding the dev stack"). Nothing is
// mocked: Postgres comes from pkg/weftest, NATS is the stack's
// embedded JetStream.
package devstacktest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
)

// Step bounds each wait of a test: the build, the stack coming up, one
// weft command. Generous, for a loaded machine; a failure still comes well
// before the test binary's timeout. It is a bound on a hang, not a
// measured time.
const Step = 3 * time.Minute

// Endpoints is what `weft dev` writes to endpoints.json in its data folder
// (docs/cli.md); the examples' workers read the same file.
type Endpoints struct {
	Gateway          string `json:"gateway"`
	ReadAPI          string `json:"readApi"`
	NATS             string `json:"nats"`
	NATSUser         string `json:"natsUser"`
	NATSPasswordFile string `json:"natsPasswordFile"`
	TokenFile        string `json:"tokenFile"`
}

// Stack is a running `weft dev`.
type Stack struct {
	// Dir is the stack's data folder, WEFT_DEV_DIR.
	Dir string
	// Endpoints is what the stack wrote to Dir/endpoints.json.
	Endpoints Endpoints
	weft      string
	out       *weftest.Buffer
}

// Root is the module's root folder.
func Root(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok, "no caller information")
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Start builds the weft binary and starts `weft dev` on a fresh database,
// without the demo run, and returns once its banner is printed. The test's
// cleanup stops it (SIGTERM) and, when the test failed, logs its output.
func Start(t *testing.T) *Stack {
	t.Helper()
	db := weftest.NewDB(t)
	s := &Stack{Dir: t.TempDir(), weft: Build(t, "./cmd/weft"), out: &weftest.Buffer{}}
	// Stopped by the cleanup: SIGTERM, as Ctrl-C stops it, then a kill
	// if it has not exited within Step.
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	cmd := exec.CommandContext(ctx, s.weft, "dev")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = Step
	cmd.Env = append(s.Env(),
		"WEFT_DATABASE_URL="+db.URL,
		"WEFT_DEV_NATS_PORT="+strconv.Itoa(weftest.FreePort(t)),
		"WEFT_DEV_GATEWAY_ADDR=127.0.0.1:0",
		"WEFT_DEV_UI_ADDR=127.0.0.1:0",
		"WEFT_DEV_OPS_ADDR=127.0.0.1:0",
		"WEFT_DEV_DEMO=false")
	cmd.Stdout, cmd.Stderr = s.out, s.out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		err := <-done
		done <- err
		// Wait says "context canceled" of a process the context stopped,
		// even when it exited 0: its exit status tells.
		if !cmd.ProcessState.Success() {
			t.Errorf("weft dev did not stop cleanly on SIGTERM: %v", err)
		}
		if t.Failed() {
			t.Logf("--- weft dev (exit: %v) ---\n%s", err, tail(s.out.String()))
		}
	})
	deadline := time.After(Step)
	for !strings.Contains(s.out.String(), "Weft dev stack is up") {
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Fatalf("weft dev exited early: %v\n%s", err, tail(s.out.String()))
		case <-deadline:
			t.Fatalf("weft dev not up within %v\n%s", Step, tail(s.out.String()))
		case <-time.After(20 * time.Millisecond):
		}
	}
	b, err := os.ReadFile(filepath.Join(s.Dir, "endpoints.json"))
	require.NoError(t, err, "weft dev writes its endpoints before its banner")
	require.NoError(t, json.Unmarshal(b, &s.Endpoints))
	return s
}

// Env is the environment of a process beside the stack: PATH, HOME and
// WEFT_DEV_DIR, nothing else of the test's, so that it finds the stack as
// a user's program does.
func (s *Stack) Env() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "WEFT_DEV_DIR=" + s.Dir}
}

// Token is the stack's API token, from the token file it wrote.
func (s *Stack) Token(t testing.TB) string {
	t.Helper()
	require.NotEmpty(t, s.Endpoints.TokenFile, "weft dev wrote its token file")
	b, err := os.ReadFile(s.Endpoints.TokenFile)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// Weft runs the weft command args beside the stack, from the module's
// root, and returns its stdout; it fails the test when the command fails.
func (s *Stack) Weft(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Step)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.weft, args...)
	cmd.Dir, cmd.Env = Root(t), s.Env()
	var stderr weftest.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "weft %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), out, stderr.String())
	return string(out)
}

// Build builds the main package pkg (a path from the module's root, like
// "./cmd/weft") into a temporary folder and returns the executable's path.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the examples' tests build their programs with the go tool")
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	ctx, cancel := context.WithTimeout(t.Context(), Step)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", out, pkg)
	cmd.Dir = Root(t)
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", pkg, output)
	return out
}

// tail is the end of a process's output, for a failure message.
func tail(s string) string {
	const n = 8000
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
