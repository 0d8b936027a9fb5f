package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest"
)

// admissionToken is the API token of the admission tests' gateways.
const admissionToken = "weft_admission_test_token"

// admissionStack is `weft gateway`, and optionally `weft relay` and
// `weft engine`, or `weft dev` alone, run as their commands with an
// admission file.
type admissionStack struct {
	file   string
	env    map[string]string // the commands' environment
	c      *client.Client
	log    *eventlog.Store
	logs   map[string]*weftest.Buffer // each command's stderr
	nextID int
}

// startAdmissionStack writes doc to an admission file and runs commands
// ("gateway" first, or "dev") on a fresh database and NATS with it, the
// file read every interval (negative: on SIGHUP only).
func startAdmissionStack(t *testing.T, doc, interval string, commands ...string) *admissionStack {
	t.Helper()
	db, ns := weftest.NewDB(t), weftest.NewNATS(t)
	s := &admissionStack{file: filepath.Join(t.TempDir(), "admission.yaml"), log: eventlog.New(db.Pool), logs: map[string]*weftest.Buffer{}}
	s.write(t, doc)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(weftest.FreePort(t)))
	env := map[string]string{
		"WEFT_DATABASE_URL": db.URL, "WEFT_NATS_URL": ns.URL(),
		"WEFT_ADMISSION_FILE": s.file, "WEFT_ADMISSION_RELOAD_INTERVAL": interval,
		"WEFT_TASK_KEY":     task.EncodeTaskKey(bytes.Repeat([]byte{7}, task.MinTaskKeyBytes)),
		"WEFT_API_KEYS":     "admin default admin " + auth.HashKey(admissionToken),
		"WEFT_GATEWAY_ADDR": addr, "WEFT_GATEWAY_SCHEDULER": "false",
		"WEFT_GATEWAY_OPS_ADDR": opsOff, "WEFT_ENGINE_OPS_ADDR": opsOff, "WEFT_RELAY_OPS_ADDR": opsOff,
		"WEFT_DEV_DIR": t.TempDir(), "WEFT_DEV_NATS_PORT": strconv.Itoa(weftest.FreePort(t)), "WEFT_DEV_GATEWAY_ADDR": addr,
		"WEFT_DEV_UI_ADDR": "127.0.0.1:0", "WEFT_DEV_OPS_ADDR": opsOff, "WEFT_DEV_TOKEN": admissionToken, "WEFT_DEV_DEMO": "false",
	}
	s.env = env
	for _, cmd := range commands {
		s.logs[cmd] = &weftest.Buffer{}
		runInBackground(t, []string{cmd}, s.logs[cmd], env)
	}
	for _, cmd := range commands {
		if cmd != "relay" { // the relay reads no admission file
			s.waitLog(t, cmd, "watching the admission file")
		}
	}
	c, err := client.New("http://"+addr, client.WithToken(admissionToken), client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	require.NoError(t, err)
	s.c = c
	require.Eventually(t, func() bool {
		conn, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", addr)
		if err == nil {
			_ = conn.Close()
		}
		return err == nil
	}, time.Minute, 10*time.Millisecond, "the gateway listens")
	return s
}

// write replaces the admission file with doc at once, as the docs advise.
func (s *admissionStack) write(t *testing.T, doc string) {
	t.Helper()
	require.NoError(t, os.WriteFile(s.file+".new", []byte(doc), 0o600))
	require.NoError(t, os.Rename(s.file+".new", s.file))
}

// waitLog waits, up to a minute, until cmd has logged text n times in all
// (1 when n is omitted).
func (s *admissionStack) waitLog(t *testing.T, cmd, text string, n ...int) {
	t.Helper()
	want := 1
	if len(n) > 0 {
		want = n[0]
	}
	require.Eventually(t, func() bool { return strings.Count(s.logs[cmd].String(), text) >= want },
		time.Minute, 5*time.Millisecond, "weft %s logs %q %d times; it logged:\n%s", cmd, text, want, s.logs[cmd].String())
}

// start asks the gateway for a run of environment env whose one step waits
// for a signal, so that it holds its place until the test ends.
func (s *admissionStack) start(t *testing.T, env string) (string, error) {
	t.Helper()
	s.nextID++
	doc := `{"planId":"hold","planVersion":"1","steps":[{"id":"gate","kind":"waitSignal","signal":"go"}]}`
	res, err := s.c.StartRun(t.Context(), api.StartRunRequest{TenantID: "default", ProjectID: "demo", EnvironmentID: env,
		PlanID: "hold", PlanVersion: "1", Plan: json.RawMessage(doc), RunRequestID: env + "-" + strconv.Itoa(s.nextID)})
	if err != nil {
		return "", err
	}
	return res.RunID, nil
}

// mustStart starts a run of env that the gateway must accept.
func (s *admissionStack) mustStart(t *testing.T, env string) string {
	t.Helper()
	id, err := s.start(t, env)
	require.NoError(t, err, "a run of %s", env)
	return id
}

// requireRejected checks the gateway refuses a run of env as overloaded.
func (s *admissionStack) requireRejected(t *testing.T, env string) {
	t.Helper()
	_, err := s.start(t, env)
	require.True(t, client.IsCode(err, api.CodeOverloaded), "a run of %s is refused with 429 Overloaded: %v", env, err)
}

// waitEvent waits, up to a minute, for the run's event of type typ and
// returns it.
func (s *admissionStack) waitEvent(t *testing.T, runID string, typ events.Type) events.Event {
	t.Helper()
	var found events.Event
	require.Eventually(t, func() bool {
		evs, err := s.log.EventsFetchAfter(t.Context(), runID, 0, 1000)
		require.NoError(t, err)
		i := slices.IndexFunc(evs, func(e events.Event) bool { return e.EventType == typ })
		if i >= 0 {
			found = evs[i]
		}
		return i >= 0
	}, time.Minute, 5*time.Millisecond, "run %s records %s", runID, typ)
	return found
}

// hasEvent reports whether the run has recorded an event of type typ.
func (s *admissionStack) hasEvent(t *testing.T, runID string, typ events.Type) bool {
	t.Helper()
	evs, err := s.log.EventsFetchAfter(t.Context(), runID, 0, 1000)
	require.NoError(t, err)
	return slices.ContainsFunc(evs, func(e events.Event) bool { return e.EventType == typ })
}

// delayedUntil is the DelayedUntil of a RunStarted event.
func delayedUntil(t *testing.T, ev events.Event) time.Time {
	t.Helper()
	var data events.RunStartedData
	if len(ev.EventData) > 0 {
		require.NoError(t, json.Unmarshal(ev.EventData, &data))
	}
	return data.DelayedUntil
}

// The admission file reaches `weft gateway` and `weft engine`: REJECT
// refuses a run over the limit (HTTP 429), QUEUE parks it until a place
// frees, DELAY starts it with its dispatch put off. A changed file takes
// effect in both commands without a restart, and a bad one keeps the last
// good limits, its error logged naming the field.
func TestAdmissionFileThroughTheCommands(t *testing.T) {
	t.Parallel()
	s := startAdmissionStack(t, `
environments:
  rej: {maxConcurrentRuns: 1, policy: REJECT, retryAfter: 7s}
  que: {maxConcurrentRuns: 1}
  del: {maxConcurrentRuns: 1, policy: DELAY, delayBy: 1h}
`, "10ms", "gateway", "relay", "engine")

	rej1 := s.mustStart(t, "rej")
	s.waitEvent(t, rej1, events.RunStarted)
	s.requireRejected(t, "rej")

	que1 := s.mustStart(t, "que")
	s.waitEvent(t, que1, events.RunStarted)
	que2 := s.mustStart(t, "que")
	var held events.RunQueuedData
	require.NoError(t, s.waitEvent(t, que2, events.RunQueued).Data(&held))
	require.Equal(t, events.RunQueuedData{EnvironmentID: "que", Running: 1, Limit: 1,
		Reason: "1 of 1 running in environment que"}, held, "RunQueued says which limit holds the run")
	require.False(t, s.hasEvent(t, que2, events.RunStarted), "the second run of que waits in the queue")

	del1 := s.mustStart(t, "del")
	require.True(t, delayedUntil(t, s.waitEvent(t, del1, events.RunStarted)).IsZero(), "the first run of del starts at once")
	del2 := s.mustStart(t, "del")
	require.False(t, delayedUntil(t, s.waitEvent(t, del2, events.RunStarted)).IsZero(), "the second run of del starts delayed")

	s.write(t, `
environments:
  rej: {maxConcurrentRuns: 2, policy: REJECT}
  que: {maxConcurrentRuns: 2}
`)
	s.waitLog(t, "gateway", "admission file reloaded")
	s.waitLog(t, "engine", "admission file reloaded")
	s.waitEvent(t, que2, events.RunStarted) // the run-queue reconciler found a place
	s.mustStart(t, "rej")
	s.requireRejected(t, "rej")

	s.write(t, "environments:\n  rej: {maxConcurrentRuns: 9, policy: REJCT}\n")
	for _, cmd := range []string{"gateway", "engine"} {
		s.waitLog(t, cmd, "admission file not reloaded")
		require.Contains(t, s.logs[cmd].String(), "environments.rej.policy")
	}
	s.requireRejected(t, "rej") // still two runs at most, under REJECT
}

// requireShownQueued checks, through `weft dev`'s read API, that the CLI
// shows runID QUEUED with reason, and that the runs list filters on
// QUEUED.
func (s *admissionStack) requireShownQueued(t *testing.T, runID, reason string) {
	t.Helper()
	env := map[string]string{"WEFT_DEV_DIR": s.env["WEFT_DEV_DIR"], "WEFT_TOKEN": admissionToken}
	var shown string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r := weft(t, env, "run", "get", runID)
		shown = r.out
		require.NoError(c, r.err)
		require.Contains(c, r.out, "QUEUED, 0/1 steps done", "weft run get shows the run QUEUED")
	}, time.Minute, 10*time.Millisecond)
	require.Regexp(t, `Queued\s+`+reason+`, for \d+s`, shown)

	list := decode[api.RunList](t, weft(t, env, "runs", "ls", "--status", "QUEUED", "-o", "json"))
	require.Len(t, list.Runs, 1)
	require.Equal(t, runID, list.Runs[0].RunID)
	r := weft(t, env, "runs", "ls", "--status", "QUEUED", "--environment", list.Runs[0].EnvironmentID, "--limit", "1")
	require.NoError(t, r.err)
	require.Contains(t, r.out, runID)
	require.Contains(t, r.out, "QUEUED")
	none := decode[api.RunList](t, weft(t, env, "runs", "ls", "--status", "QUEUED", "--environment", "rej", "-o", "json"))
	require.Empty(t, none.Runs, "the environment filter")
}

// `weft gateway` reloads the admission file on SIGHUP. Not parallel: the
// signal goes to the whole test process, and the gateway must be the one
// that catches it.
func TestAdmissionFileReloadsOnSIGHUP(t *testing.T) {
	s := startAdmissionStack(t, "environments: {prod: {maxConcurrentRuns: 1, policy: REJECT}}", "-1s", "gateway")
	s.mustStart(t, "prod") // the gateway holds its place from approval on
	s.requireRejected(t, "prod")
	s.write(t, "environments: {prod: {maxConcurrentRuns: 2, policy: REJECT}}")
	s.requireRejected(t, "prod") // no polling: unchanged until the signal
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	s.waitLog(t, "gateway", "admission file reloaded")
	s.mustStart(t, "prod")
	s.requireRejected(t, "prod")
}

// `weft gateway`, `weft engine` and `weft dev` refuse to start with an
// admission file they cannot read or that is invalid, before they connect
// to anything, naming the flag, the file and the field at fault.
func TestAdmissionFileRefusedAtStart(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "admission.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("environments:\n  prod:\n    maxConcurrentRuns: many\n"), 0o600))
	env := map[string]string{
		"WEFT_API_KEYS":       "admin default admin " + auth.HashKey(admissionToken),
		"WEFT_TASK_KEY":       task.EncodeTaskKey(bytes.Repeat([]byte{7}, task.MinTaskKeyBytes)),
		"WEFT_ADMISSION_FILE": bad,
	}
	for _, cmd := range []string{"gateway", "engine", "dev"} {
		err := run(t.Context(), []string{cmd}, &weftest.Buffer{}, &weftest.Buffer{}, envOf(env))
		require.ErrorContains(t, err, "weft "+cmd+" --admission-file: "+bad+": admission file: environments.prod.maxConcurrentRuns (line 3)")
	}
	missing := filepath.Join(t.TempDir(), "none.yaml")
	err := run(t.Context(), []string{"gateway", "--admission-file", missing}, &weftest.Buffer{}, &weftest.Buffer{}, envOf(env))
	require.ErrorContains(t, err, "--admission-file: admission file: open "+missing)
}

// `weft dev` passes its admission file to its engine and its gateway, and
// reloads it.
func TestAdmissionFileInDev(t *testing.T) {
	t.Parallel()
	s := startAdmissionStack(t, `
environments:
  rej: {maxConcurrentRuns: 1, policy: REJECT}
  que: {maxConcurrentRuns: 1, policy: QUEUE}
`, "10ms", "dev")
	s.waitEvent(t, s.mustStart(t, "rej"), events.RunStarted)
	s.requireRejected(t, "rej")
	s.waitEvent(t, s.mustStart(t, "que"), events.RunStarted)
	que2 := s.mustStart(t, "que")
	s.waitEvent(t, que2, events.RunQueued)
	s.requireShownQueued(t, que2, "1 of 1 running in environment que")

	s.write(t, "environments: {rej: {maxConcurrentRuns: 2, policy: REJECT}, que: {maxConcurrentRuns: 2}}")
	s.waitLog(t, "dev", "admission file reloaded")
	s.waitEvent(t, que2, events.RunStarted)
	s.mustStart(t, "rej")
	s.requireRejected(t, "rej")
}
