package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
)

// A Ctrl-C of `weft dev`, the binary `make run` runs (its main, run by
// the test binary), drains the stack and exits 0; the demo run is started on the first start of a data
// folder only.
func TestDevCtrlCExitsZeroAndTheDemoRunsOnce(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	dir := t.TempDir()

	for start, wantDemo := range []bool{true, false} {
		cmd := weftBinary(t.Context(), []string{"WEFT_DEV_DIR=" + dir, "WEFT_DATABASE_URL=" + db.URL,
			"WEFT_DEV_GATEWAY_ADDR=127.0.0.1:0", "WEFT_DEV_UI_ADDR=127.0.0.1:0", "WEFT_DEV_OPS_ADDR=off",
			"WEFT_DEV_NATS_PORT=" + strconv.Itoa(weftest.FreePort(t)), "WEFT_DEV_DEMO=true"}, "dev")
		var stdout, stderr weftest.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Start())
		waitForText(t, &stdout, "Press Ctrl-C to stop.")
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		require.NoError(t, cmd.Wait(), "start %d: a drained stop exits 0\nstderr: %s", start, stderr.String())
		require.Contains(t, stdout.String(), "shutting down…\nWeft dev stack stopped.\n")
		require.Equal(t, wantDemo, strings.Contains(stderr.String(), `"msg":"demo run started"`), "start %d", start)
	}
}

// waitForText waits until out holds text, for at most a minute.
func waitForText(t *testing.T, out *weftest.Buffer, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for !strings.Contains(out.String(), text) {
		select {
		case <-ctx.Done():
			t.Fatalf("no %q within a minute in %q", text, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// `make run` runs the built binary, not `go run` (which exits 1 when
// Ctrl-C reaches it), and `make help` says what `make bench` does and how
// long it takes.
func TestMakefileRunAndBenchHelp(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	dry, err := exec.CommandContext(t.Context(), "make", "-s", "-n", "-C", root, "run").CombinedOutput()
	require.NoError(t, err, "%s", dry)
	require.NotContains(t, string(dry), "go run")
	require.Contains(t, string(dry), "/.bin/weft dev")

	help, err := exec.CommandContext(t.Context(), "make", "-s", "-C", root, "help").CombinedOutput()
	require.NoError(t, err, "%s", help)
	require.Contains(t, string(help), "  bench    Run every benchmark of ./bench for about 23 minutes")
}
