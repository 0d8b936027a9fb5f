package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/health"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// get answers a GET of url: the status and the body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, http.NoBody)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// readiness reads a /readyz answer; ok false when the listener does not
// answer yet.
func readiness(t *testing.T, url string) (health.Report, int, bool) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"/readyz", http.NoBody)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return health.Report{}, 0, false
	}
	defer func() { _ = resp.Body.Close() }()
	var r health.Report
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	return r, resp.StatusCode, true
}

// A service run with --ensure-streams=false waits for the streams, and its
// /readyz says which one is missing until another process creates them;
// then it answers 200 with every check, /healthz and /metrics answer, and
// the service stops cleanly with its context.
func TestWorkerOpsListenerWhileWaitingForStreams(t *testing.T) {
	t.Parallel()
	ns := weftest.NewNATS(t)
	ops := "127.0.0.1:" + strconv.Itoa(weftest.FreePort(t))
	var errOut weftest.Buffer
	stop := runInBackground(t, []string{"worker", "--ensure-streams=false"}, &errOut, map[string]string{
		"WEFT_NATS_URL": ns.URL(), "WEFT_WORKER_OPS_ADDR": ops,
	})
	base := "http://" + ops

	var r health.Report
	require.Eventually(t, func() bool {
		var status int
		var ok bool
		r, status, ok = readiness(t, base)
		return ok && status == http.StatusServiceUnavailable
	}, time.Minute, 20*time.Millisecond, "the worker's /readyz answers")
	require.Equal(t, []string{"stream WEFT_TASKS", "stream WEFT_RESULTS", "consumer tasks-default"}, r.Failing)
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), "waiting for Weft's JetStream streams") },
		time.Minute, 20*time.Millisecond, "the wait is logged with what creates the streams")

	require.NoError(t, streams.Ensure(t.Context(), ns.JetStream(t), streams.Config{}))
	require.Eventually(t, func() bool {
		_, status, _ := readiness(t, base)
		return status == http.StatusOK
	}, time.Minute, 20*time.Millisecond, "ready once the streams exist")
	r, _, _ = readiness(t, base)
	require.Equal(t, []health.CheckResult{{Name: "nats", Status: "ok"}, {Name: "stream WEFT_TASKS", Status: "ok"},
		{Name: "stream WEFT_RESULTS", Status: "ok"}, {Name: "consumer tasks-default", Status: "ok"}}, r.Checks)
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), "activity worker serving") },
		time.Minute, 20*time.Millisecond, "the worker starts once the streams exist")

	status, body := get(t, base+"/healthz")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"status":"ok"}`, body)
	status, body = get(t, base+"/metrics")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "# HELP")

	require.NoError(t, stop())
}

// runInBackground runs weft with args and env until the returned stop
// cancels it; stop returns what weft returned. The test's cleanup stops it
// too.
func runInBackground(t *testing.T, args []string, errOut *weftest.Buffer, env map[string]string) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, &weftest.Buffer{}, errOut, envOf(env)) }()
	var result error
	stopped := false
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			result = <-done
		}
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// `weft dev` serves the whole stack's readiness on its ops listener and
// prints where.
func TestDevServesTheStacksReadiness(t *testing.T) {
	t.Parallel()
	dev := startDev(t, weftest.NewDB(t), "true")
	ops, _, ok := strings.Cut(bannerURL(t, dev.out.String(), "Ops:"), " ")
	require.True(t, ok)
	r, status, answered := readiness(t, ops)
	require.True(t, answered)
	require.Equal(t, http.StatusOK, status, "%+v", r)
	var names []string
	for _, c := range r.Checks {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"postgres", "nats", "stream WEFT_EVENTS", "stream WEFT_TASKS", "stream WEFT_RESULTS",
		"consumer engine-events-0", "consumer engine-results-0", "consumer projector", "consumer tasks-default"}, names)
	require.Eventually(t, func() bool {
		status, body := get(t, ops+"/metrics")
		return status == http.StatusOK && strings.Contains(body, "weft_projector_events_applied")
	}, time.Minute, 50*time.Millisecond, "the projector's instruments are on the stack's /metrics once it applies the demo run")
	api := strings.TrimSuffix(bannerURL(t, dev.out.String(), "Read API:"), "/v1/runs")
	status, body := get(t, api+"/metrics")
	require.Equal(t, http.StatusNotFound, status, "the metrics (every tenant's run counts) are not on the public API listener")
	require.NotContains(t, body, "weft_projector")
	require.NoError(t, dev.stop())
}

// Every fixed address of `weft dev` is checked before anything starts: a
// taken one is named with the flag and variable that move it.
func TestDevSaysWhichAddressIsTaken(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = taken.Close() })
	addr := taken.Addr().String()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	free := map[string]string{
		"WEFT_DEV_DIR":          t.TempDir(),
		"WEFT_DEV_GATEWAY_ADDR": "127.0.0.1:0",
		"WEFT_DEV_UI_ADDR":      "127.0.0.1:0",
		"WEFT_DEV_OPS_ADDR":     "127.0.0.1:0",
		"WEFT_DEV_NATS_PORT":    strconv.Itoa(weftest.FreePort(t)),
		// Unreachable: the check must come before any use of Postgres.
		"WEFT_DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
	}
	for key, want := range map[string]string{
		"WEFT_DEV_GATEWAY_ADDR": "gateway address " + addr + " is taken: stop what uses it or pass --gateway-addr / WEFT_DEV_GATEWAY_ADDR",
		"WEFT_DEV_UI_ADDR":      "UI address " + addr + " is taken: stop what uses it or pass --ui-addr / WEFT_DEV_UI_ADDR",
		"WEFT_DEV_OPS_ADDR":     "ops address " + addr + " is taken: stop what uses it or pass --ops-addr / WEFT_DEV_OPS_ADDR",
		"WEFT_DEV_NATS_PORT":    "NATS port " + addr + " is taken: stop what uses it or pass --nats-port / WEFT_DEV_NATS_PORT",
	} {
		env := map[string]string{}
		for k, v := range free {
			env[k] = v
		}
		env[key] = addr
		if key == "WEFT_DEV_NATS_PORT" {
			env[key] = port
		}
		var out, errOut weftest.Buffer
		err := run(t.Context(), []string{"dev"}, &out, &errOut, envOf(env))
		require.ErrorContains(t, err, want, key)
	}
}

// Without Postgres binaries (and without WEFT_DATABASE_URL) `weft dev`
// says what to install and the alternative.
func TestDevSaysWhatToInstallWithoutPostgres(t *testing.T) {
	t.Parallel()
	var out, errOut weftest.Buffer
	err := run(t.Context(), []string{"dev"}, &out, &errOut, envOf(map[string]string{
		"WEFT_DEV_DIR":              t.TempDir(),
		"WEFT_DEV_POSTGRES_BIN_DIR": t.TempDir(),
		"WEFT_DEV_GATEWAY_ADDR":     "127.0.0.1:0",
		"WEFT_DEV_UI_ADDR":          "127.0.0.1:0",
		"WEFT_DEV_OPS_ADDR":         "off",
		"WEFT_DEV_NATS_PORT":        strconv.Itoa(weftest.FreePort(t)),
	}))
	require.ErrorContains(t, err, "start a private Postgres (or set WEFT_DATABASE_URL to a running server)")
	require.ErrorContains(t, err, "PostgreSQL server binaries (initdb, pg_ctl) not found")
	require.ErrorContains(t, err, "apt-get install postgresql")
}

// stopAll returns when its time is up even if a stop hangs, reports the
// hung one, and still calls the stops after it, in reverse order, each
// with its grace.
func TestStopAllIsBoundedWhenAPartHangs(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var calls []string
	record := func(name string) func(context.Context) error {
		return func(context.Context) error { calls = append(calls, name); return nil }
	}
	hang := func(context.Context) error { <-release; return nil }
	var graceLeft bool
	first := func(ctx context.Context) error {
		_, graceLeft = ctx.Deadline()
		graceLeft = graceLeft && ctx.Err() == nil
		return record("first")(ctx)
	}
	err := stopAll(t.Context(), 50*time.Millisecond, time.Hour, []func(context.Context) error{first, hang, record("last")})
	require.ErrorContains(t, err, "a part of the dev stack did not stop in time")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, []string{"last", "first"}, calls)
	require.True(t, graceLeft, "a stop after the timeout still gets its grace")
}

func TestStopAllJoinsErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	err := stopAll(t.Context(), time.Minute, time.Minute, []func(context.Context) error{
		func(context.Context) error { return boom },
		func(context.Context) error { return nil },
	})
	require.ErrorIs(t, err, boom)
}

// `weft health` succeeds on a 2xx answer, prints the body, and fails on
// anything else, naming the status.
func TestHealthCommand(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"status":"unavailable","failing":["postgres"]}`)
			return
		}
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	}))
	t.Cleanup(srv.Close)

	var out, errOut weftest.Buffer
	require.NoError(t, runHealth(t.Context(), &environment{stdout: &out, stderr: &errOut, getenv: envOf(nil)},
		[]string{"--url", srv.URL + "/healthz"}))
	require.JSONEq(t, `{"status":"ok"}`, out.String())

	out = weftest.Buffer{}
	err := runHealth(t.Context(), &environment{stdout: &out, stderr: &errOut,
		getenv: envOf(map[string]string{"WEFT_HEALTH_URL": srv.URL + "/readyz"})}, nil)
	require.ErrorContains(t, err, "answered 503 Service Unavailable")
	require.Contains(t, out.String(), `"failing":["postgres"]`)

	err = runHealth(t.Context(), &environment{stdout: &out, stderr: &errOut, getenv: envOf(nil)}, nil)
	require.ErrorContains(t, err, "give the URL to probe, as the argument, --url or WEFT_HEALTH_URL")

	// The URL as the one argument, as the README writes it; the ops
	// address alone probes /readyz.
	out = weftest.Buffer{}
	require.NoError(t, runHealth(t.Context(), &environment{stdout: &out, stderr: &errOut, getenv: envOf(nil)},
		[]string{srv.URL + "/healthz"}))
	require.JSONEq(t, `{"status":"ok"}`, out.String())
	err = runHealth(t.Context(), &environment{stdout: &out, stderr: &errOut, getenv: envOf(nil)}, []string{srv.URL})
	require.ErrorContains(t, err, srv.URL+"/readyz answered 503")
	err = runHealth(t.Context(), &environment{stdout: &out, stderr: &errOut, getenv: envOf(nil)}, []string{srv.URL, "extra"})
	require.ErrorContains(t, err, `unexpected arguments ["extra"]`)
	err = runHealth(t.Context(), &environment{stdout: &out, stderr: &errOut, getenv: envOf(nil)}, []string{"127.0.0.1:9183"})
	require.ErrorContains(t, err, `"127.0.0.1:9183" is not a URL`)

	// Nothing listens on a closed server's address.
	srv.Close()
	err = runHealth(t.Context(), &environment{stdout: &out, stderr: &errOut, getenv: envOf(nil)}, []string{"--url", srv.URL})
	require.Error(t, err)
}

func TestRedactNATSHidesEveryPassword(t *testing.T) {
	t.Parallel()
	require.Equal(t, "nats://engine:xxxxx@nats:4222,nats://engine:xxxxx@nats2:4222",
		redactNATS("nats://engine:secret@nats:4222,nats://engine:secret@nats2:4222"))
	require.Equal(t, "nats://127.0.0.1:4222", redactNATS("nats://127.0.0.1:4222"))
}

// A NATS URL without a server says so, before the ops listener is bound.
func TestServiceCommandsCheckBackendsBeforeListening(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = taken.Close() })
	var out, errOut weftest.Buffer
	err = run(t.Context(), []string{"engine"}, &out, &errOut, envOf(map[string]string{"WEFT_ENGINE_OPS_ADDR": taken.Addr().String()}))
	require.ErrorContains(t, err, "no NATS server: set WEFT_NATS_URL")

	// With the backends there, the taken address is named with its flag.
	ns := weftest.NewNATS(t)
	err = run(t.Context(), []string{"worker"}, &out, &errOut, envOf(map[string]string{
		"WEFT_NATS_URL": ns.URL(), "WEFT_WORKER_OPS_ADDR": taken.Addr().String(),
	}))
	require.ErrorContains(t, err, "ops: listen on "+taken.Addr().String())
	require.ErrorContains(t, err, "--ops-addr or WEFT_WORKER_OPS_ADDR")
}

// The ops listener serves Go's profiles only when WEFT_PPROF is "true".
func TestOpsServesProfilesOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	for _, on := range []string{"", "true"} {
		env := &environment{getenv: func(k string) string { return map[string]string{pprofEnv: on}[k] }}
		o, err := newOps(t.Context(), env, "weft-test", opsOff, "")
		require.NoError(t, err)
		probes, err := health.New(0)
		require.NoError(t, err)
		srv := httptest.NewServer(o.handler(probes))
		status, body := get(t, srv.URL+"/debug/pprof/")
		status2, _ := get(t, srv.URL+"/debug/pprof/profile?seconds=1")
		srv.Close()
		if on == "true" {
			require.Equal(t, http.StatusOK, status)
			require.Contains(t, body, "goroutine")
			require.Equal(t, http.StatusOK, status2)
			continue
		}
		require.Equal(t, http.StatusNotFound, status)
		require.Equal(t, http.StatusNotFound, status2)
	}
}
