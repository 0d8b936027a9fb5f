package projector_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/keylimit"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/projector"
)

// Every route needs a key the projector knows, before it looks at the
// request.
func TestUnauthenticated(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := events.NewRunID()
	paths := []string{"/v1/runs", "/v1/runs?limit=0", "/v1/runs/" + runID, "/v1/runs/not-a-uuid",
		"/v1/runs/" + runID + "/events", "/v1/alerts"}
	for _, path := range paths {
		for _, header := range [][]string{
			nil,
			{"Authorization", "Bearer nobody-token-0123456789"},
			{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("reader:"+readerToken))},
			{"Authorization", readerToken},
		} {
			r := s.do(t, http.MethodGet, path, "", header...)
			requireError(t, r, http.StatusUnauthorized, api.CodeUnauthenticated)
			require.Equal(t, `Bearer realm="weft"`, r.header.Get("WWW-Authenticate"), "GET %s with %q", path, header)
		}
	}
}

// A key sees its tenant only: another tenant's run is answered exactly as
// a run that does not exist, and a tenant filter naming another tenant is
// refused.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.completed(t, "mine")
	missing := events.NewRunID()

	for _, suffix := range []string{"", "/events", "?waitForSeq=1&timeout=0s", "/events?afterSeq=0&limit=10"} {
		theirs := s.fetch(t, otherToken, "/v1/runs/"+runID+suffix)
		requireError(t, theirs, http.StatusNotFound, api.CodeNotFound, runID)
		require.Empty(t, theirs.header.Get("ETag"))
		none := s.fetch(t, readerToken, "/v1/runs/"+missing+suffix)
		require.Equal(t, string(none.body), strings.ReplaceAll(string(theirs.body), runID, missing), "suffix %q", suffix)
		require.Equal(t, http.StatusOK, s.fetch(t, readerToken, "/v1/runs/"+runID+suffix).status, "the owner reads it")
	}
	empty := s.fetch(t, otherToken, "/v1/runs")
	require.Equal(t, http.StatusOK, empty.status)
	require.JSONEq(t, `{"runs":[]}`, string(empty.body), "another tenant's list is empty")
	require.Empty(t, s.list(t, otherToken, "tenant=other").Runs)
	require.Equal(t, []string{runID}, runIDs(s.list(t, readerToken, "tenant="+tenant).Runs))
	requireError(t, s.fetch(t, readerToken, "/v1/runs?tenant=other"), http.StatusForbidden, api.CodePermissionDenied)
	requireError(t, s.fetch(t, otherToken, "/v1/runs?tenant="+tenant), http.StatusForbidden, api.CodePermissionDenied)
}

// A key sees the alerts of its tenant's runs and those of no run.
func TestAlertsOfTheTenant(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{LagAlert: time.Nanosecond}) // every batch raises PROJECTOR_LAG_HIGH
	runID := s.approve(t, "gap")
	s.waitRun(t, runID, atSeq(1), "approved")
	s.publishAhead(t, runID, 1)
	s.waitRun(t, runID, func(v api.RunView) bool { return v.Stale }, "goes STALE")

	var mine []projector.Alert
	require.Eventually(t, func() bool {
		mine = s.alertsFor(t, readerToken)
		return slices.Contains(alertCodes(mine), projector.AlertLagHigh)
	}, waitFor, 10*time.Millisecond, "the lag alert is raised")
	require.True(t, slices.ContainsFunc(mine, func(a projector.Alert) bool {
		return a.Code == projector.AlertGap && a.RunID == runID
	}), "acme sees its run's gap alert: %+v", mine)

	theirs := s.alertsFor(t, otherToken)
	require.Equal(t, []string{projector.AlertLagHigh}, alertCodes(theirs), "only the alert of no run: %+v", theirs)
	require.Empty(t, theirs[0].RunID)
}

// Each limit at its edge, and every malformed parameter, answered in the
// error shape with the right code.
func TestBadInput(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.approve(t, "bad")
	s.waitRun(t, runID, atSeq(1), "approved")
	run, evs := "/v1/runs/"+runID, "/v1/runs/"+runID+"/events"
	emptyCursor := base64.RawURLEncoding.EncodeToString([]byte(`{}`))

	const ok, bad = http.StatusOK, http.StatusBadRequest
	for _, tc := range []struct {
		path   string
		status int
		parts  []string // in the message
	}{
		{"/v1/runs?limit=0", bad, []string{`limit "0"`, "1 to 200"}},
		{"/v1/runs?limit=1", ok, nil},
		{"/v1/runs?limit=200", ok, nil},
		{"/v1/runs?limit=201", bad, []string{`limit "201"`}},
		{"/v1/runs?limit=-1", bad, []string{`limit "-1"`}},
		{"/v1/runs?limit=ten", bad, []string{`limit "ten"`}},
		{"/v1/runs?status=DONE", bad, []string{`"DONE"`}},
		{"/v1/runs?status=COMPLETED,running", bad, []string{`"running"`}},
		{"/v1/runs?status=COMPLETED&status=STALE&status=GONE", bad, []string{`"GONE"`}},
		{"/v1/runs?cursor=garbage!", bad, []string{"cursor"}},
		{"/v1/runs?cursor=" + emptyCursor, bad, []string{"cursor"}},
		{"/v1/runs/not-a-uuid", bad, []string{"runId"}},
		{"/v1/runs/01900000-0000-7000-8000-00000000ABCD", bad, []string{"lowercase"}},
		{"/v1/runs/not-a-uuid/events", bad, []string{"runId"}},
		{run + "?waitForSeq=-1", bad, []string{"waitForSeq"}},
		{run + "?waitForSeq=next", bad, []string{"waitForSeq"}},
		{run + "?timeout=5s", bad, []string{"waitForSeq"}},
		{run + "?waitForSeq=1&timeout=abc", bad, []string{`timeout "abc"`}},
		{run + "?waitForSeq=1&timeout=-1s", bad, []string{"timeout"}},
		{run + "?waitForSeq=1&timeout=5", ok, nil}, // seconds; runSeq 1 is reached
		{evs + "?limit=1000", ok, nil},
		{evs + "?limit=1001", bad, []string{`limit "1001"`, "1 to 1000"}},
		{evs + "?limit=0", bad, []string{`limit "0"`}},
		{evs + "?afterSeq=-1", bad, []string{`afterSeq "-1"`}},
		{evs + "?afterSeq=one", bad, []string{`afterSeq "one"`}},
		{"/v1/nope", http.StatusNotFound, []string{"/v1/nope"}},
		{run + "/steps", http.StatusNotFound, []string{"/steps"}},
	} {
		r := s.fetch(t, readerToken, tc.path)
		switch tc.status {
		case ok:
			require.Equal(t, ok, r.status, "GET %s: %s", tc.path, r.body)
		case bad:
			requireError(t, r, bad, api.CodeInvalidArgument, tc.parts...)
		default:
			requireError(t, r, tc.status, api.CodeNotFound, tc.parts...)
		}
	}
}

// The UI's gateway calls (signals, schedules, triggers) go to the gateway
// unchanged and its answer comes back;
// without a gateway they answer 503, and an unreachable one 502.
func TestGatewayProxy(t *testing.T) {
	t.Parallel()
	type request struct{ method, path, authorization, body string }
	seen := make(chan request, 1)
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen <- request{r.Method, r.URL.Path, r.Header.Get("Authorization"), string(body)}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"accepted":true,"signalId":"s-1"}`)
	}))
	t.Cleanup(gateway.Close)
	s := newStack(t)
	runID := events.NewRunID()
	path, body := "/gateway/v1/runs/"+runID+"/signals", `{"signalName":"PAUSE","signalId":"s-1"}`
	authorization := []string{"Authorization", "Bearer operator-token-0123456789"}

	stop := s.serve(t, projector.Config{GatewayURL: gateway.URL})
	r := s.do(t, http.MethodPost, path, body, authorization...)
	require.Equal(t, http.StatusAccepted, r.status, "body: %s", r.body)
	require.JSONEq(t, `{"accepted":true,"signalId":"s-1"}`, string(r.body))
	require.Equal(t, request{http.MethodPost, "/v1/runs/" + runID + "/signals", authorization[1], body}, <-seen)
	// The UI's schedules page reads the gateway's list the same way.
	r = s.do(t, http.MethodGet, "/gateway/v1/schedules?limit=5", "", authorization...)
	require.Equal(t, http.StatusAccepted, r.status, "body: %s", r.body)
	require.Equal(t, request{http.MethodGet, "/v1/schedules", authorization[1], ""}, <-seen)
	// Its pause, resume and delete, and the triggers page's list, too.
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/v1/schedules/nightly/pause"},
		{http.MethodPost, "/v1/schedules/nightly/resume"},
		{http.MethodDelete, "/v1/schedules/nightly"},
		{http.MethodGet, "/v1/triggers"},
	} {
		r = s.do(t, c.method, "/gateway"+c.path, "", authorization...)
		require.Equal(t, http.StatusAccepted, r.status, "%s %s: %s", c.method, c.path, r.body)
		require.Equal(t, request{c.method, c.path, authorization[1], ""}, <-seen)
	}
	// A write sent to the read API is told where writes go.
	r = s.do(t, http.MethodPost, "/v1/runs?x=1", `{}`, authorization...)
	requireError(t, r, http.StatusNotFound, api.CodeNotFound, "no such route: POST /v1/runs",
		"the read API (weft projector) serves reads only; writes go to the gateway", "POST "+gateway.URL+"/v1/runs?x=1")
	require.JSONEq(t, `{"gateway":"`+gateway.URL+`/v1/runs?x=1"}`, string(errorDetails(t, r)))
	stop()

	stop = s.serve(t, projector.Config{})
	requireError(t, s.do(t, http.MethodPost, path, body, authorization...), http.StatusServiceUnavailable, api.CodeUnavailable)
	r = s.do(t, http.MethodPost, "/v1/runs", `{}`, authorization...)
	requireError(t, r, http.StatusNotFound, api.CodeNotFound, "writes go to the gateway (weft gateway, docs/api.md)")
	require.Empty(t, errorDetails(t, r), "no gateway URL configured: none named")
	r = s.do(t, http.MethodGet, "/v1/nothing", "", authorization...)
	requireError(t, r, http.StatusNotFound, api.CodeNotFound, "no such route: GET /v1/nothing")
	require.NotContains(t, string(r.body), "gateway", "a read of no route is only that")
	stop()

	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	s.serve(t, projector.Config{GatewayURL: closed})
	requireError(t, s.do(t, http.MethodPost, path, body, authorization...), http.StatusBadGateway, api.CodeUnavailable)
}

// New refuses a configuration it cannot serve.
func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	keys := testKeys(t)
	pool, nc := weftest.NewDB(t).Pool, weftest.NewNATS(t).Conn(t)
	for _, tc := range []struct {
		cfg  projector.Config
		want string // in the error; empty: valid
	}{
		{projector.Config{}, "no API keys"},
		{projector.Config{Keys: keys, GatewayURL: "ftp://x"}, `GatewayURL "ftp://x"`},
		{projector.Config{Keys: keys, GatewayURL: "http://"}, "GatewayURL"},
		{projector.Config{Keys: keys, GatewayURL: "gateway:8080"}, "GatewayURL"},
		{projector.Config{Keys: keys, MaxWait: -time.Second}, "MaxWait"},
		{projector.Config{Keys: keys, WaitRecheck: -time.Second}, "WaitRecheck"},
		{projector.Config{Keys: keys, KeyRate: keylimit.Limit{Burst: -1}}, "KeyRate"},
		{projector.Config{Keys: keys, KeyRate: keylimit.Off, MaxLongPollsPerKey: -1}, ""},
		{projector.Config{Keys: keys, StepsPerToken: -1}, "StepsPerToken"},
		{projector.Config{Keys: keys, MaxChildrenPage: -1}, "MaxChildrenPage"},
		{projector.Config{Keys: keys, SnapshotCacheSteps: -1}, ""}, // off
		{projector.Config{Keys: keys, BatchLinger: projector.MaxBatchLinger + 1}, "BatchLinger"},
		{projector.Config{Keys: keys, BatchLinger: projector.MaxBatchLinger}, ""},
		{projector.Config{Keys: keys, BatchLinger: -1}, ""}, // off
		{projector.Config{Keys: keys, GatewayURL: "https://gateway.example:8443"}, ""},
		{projector.Config{Keys: keys}, ""},
	} {
		p, err := projector.New(pool, nc, tc.cfg)
		if tc.want == "" {
			require.NoError(t, err)
			require.NotNil(t, p)
			continue
		}
		require.ErrorContains(t, err, tc.want, "%+v", tc.cfg)
		require.Nil(t, p)
	}
}

// New needs its dependencies; a nil Logger, MeterProvider or
// TracerProvider is not one.
func TestNewNeedsPoolAndConn(t *testing.T) {
	t.Parallel()
	cfg := projector.Config{Keys: testKeys(t)}
	_, err := projector.New(nil, nil, cfg)
	require.ErrorContains(t, err, "needs a Postgres pool and a NATS connection")
}

// alertsFor returns GET /v1/alerts for token.
func (s *stack) alertsFor(t *testing.T, token string) []projector.Alert {
	t.Helper()
	var out struct {
		Alerts []projector.Alert `json:"alerts"`
	}
	s.fetch(t, token, "/v1/alerts").decode(t, &out)
	return out.Alerts
}

// GET /v1/whoami names the caller's key, tenant and role, and the actions
// it may take on its tenant: the UI offers a schedule's pause, resume and
// delete to a key with run.start only.
func TestWhoami(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	for _, tc := range []struct {
		token string
		want  projector.Whoami
	}{
		{readerToken, projector.Whoami{KeyID: "reader", TenantID: tenant, Role: "viewer", Actions: []string{"run.read"}}},
		{operatorToken, projector.Whoami{KeyID: "operator", TenantID: tenant, Role: "operator",
			Actions: []string{"run.read", "run.start", "signal.send"}}},
	} {
		var got projector.Whoami
		require.Equal(t, http.StatusOK, s.get(t, tc.token, "/v1/whoami", &got))
		require.Equal(t, tc.want, got)
	}
	requireError(t, s.fetch(t, "not-a-key", "/v1/whoami"), http.StatusUnauthorized, api.CodeUnauthenticated)
}

// errorDetails is the details of r's error body, nil when it has none.
func errorDetails(t *testing.T, r reply) json.RawMessage {
	t.Helper()
	var body struct {
		Error struct {
			Details json.RawMessage `json:"details"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(r.body, &body))
	return body.Error.Details
}
