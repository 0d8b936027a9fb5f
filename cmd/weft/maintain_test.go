package main

import (
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/health"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
)

// The retention itself is tested in internal/store/retention; this is the
// command: its one pass, its report and its bad input.
func TestMaintainOnePass(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	runID := events.NewRunID()
	for _, typ := range []events.Type{events.RunApproved, events.RunCompleted} {
		ev, err := events.New(events.Spec{RunID: runID, Type: typ, PlanVersion: "v1"})
		require.NoError(t, err)
		_, err = eventlogtest.AppendLog(t.Context(), eventlog.New(db.Pool), db.Pool, nil, ev)
		require.NoError(t, err)
	}
	env := map[string]string{"WEFT_DATABASE_URL": db.URL}

	// The migration made this month and the next three; six ahead adds two.
	r := weft(t, env, "maintain", "--partitions-ahead", "6")
	require.NoError(t, r.err, r.errOut)
	require.Equal(t, "deleted 0 ended runs; created 2 partitions\n", r.out, "the run ended just now")

	// A retention shorter than the time since the run ended deletes it.
	r = weft(t, env, "maintain", "--run-retention", "1ns")
	require.NoError(t, r.err, r.errOut)
	require.Equal(t, "deleted 1 ended runs; created 0 partitions\n", r.out)
	head, err := eventlog.New(db.Pool).RunHead(t.Context(), runID)
	require.NoError(t, err)
	require.Zero(t, head, "the run's log is gone")
}

func TestMaintainRefusesBadFlags(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"--run-retention=0":    "--run-retention must not be 0",
		"--partitions-ahead=0": "--partitions-ahead must be at least 1",
		"--every=soon":         `invalid value "soon" for flag -every`,
	} {
		r := weft(t, nil, "maintain", "--database-url", "postgres://127.0.0.1:1/x", args)
		require.ErrorContains(t, r.err, want, args)
	}
}

// Repeating its pass, `weft maintain` serves its ops listener: /readyz
// checks Postgres, /healthz answers, /metrics has the Go runtime's
// metrics; it stops cleanly with its context.
func TestMaintainServesItsOpsListener(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	ops := "127.0.0.1:" + strconv.Itoa(weftest.FreePort(t))
	stop := runInBackground(t, []string{"maintain", "--every", "1h"}, &weftest.Buffer{}, map[string]string{
		"WEFT_DATABASE_URL": db.URL, "WEFT_MAINTAIN_OPS_ADDR": ops,
	})
	base := "http://" + ops
	require.Eventually(t, func() bool { _, status, _ := readiness(t, base); return status == http.StatusOK },
		time.Minute, 20*time.Millisecond, "maintain's /readyz answers 200")
	r, _, _ := readiness(t, base)
	require.Equal(t, []health.CheckResult{{Name: "postgres", Status: "ok"}}, r.Checks)
	for path, want := range map[string]string{"/healthz": `"ok"`, "/metrics": "go_goroutines"} {
		status, body := get(t, base+path)
		require.Equal(t, http.StatusOK, status, path)
		require.Contains(t, body, want, path)
	}
	require.NoError(t, stop())
}

// One pass serves no ops listener: the address may be taken.
func TestMaintainOnePassServesNoOpsListener(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = taken.Close() })
	r := weft(t, map[string]string{"WEFT_DATABASE_URL": db.URL, "WEFT_MAINTAIN_OPS_ADDR": taken.Addr().String()}, "maintain")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "deleted 0 ended runs")
}
