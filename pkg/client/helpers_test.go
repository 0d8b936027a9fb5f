package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

// testToken is the API key every test client sends.
const testToken = "test-token"

// answer is one canned response of the fake gateway. hang makes the handler
// wait until the client gives up on the request instead, after calling
// arrived when set.
type answer struct {
	status  int
	header  map[string]string
	body    string
	hang    bool
	arrived func()
}

// jsonAnswer answers status with v as JSON.
func jsonAnswer(t *testing.T, status int, v any) answer {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return answer{status: status, body: string(data)}
}

// errAnswer answers status with the gateway's error shape.
func errAnswer(t *testing.T, status int, code, message string, details map[string]any) answer {
	t.Helper()
	return jsonAnswer(t, status, api.ErrorBody{Error: api.Error{Code: code, Message: message, Details: details}})
}

// request is what the fake gateway received.
type request struct {
	method      string
	escapedPath string
	query       string // the raw query string
	runID       string // the {runId} path value of a signal request
	header      http.Header
	body        map[string]any
}

// fakeGateway stands in for the gateway's HTTP API: it records each request
// and gives the canned answers in order, repeating the last.
type fakeGateway struct {
	t       *testing.T
	mux     *http.ServeMux
	mu      sync.Mutex
	answers []answer
	reqs    []request
}

func newFakeGateway(t *testing.T, answers ...answer) *fakeGateway {
	t.Helper()
	require.NotEmpty(t, answers)
	g := &fakeGateway{t: t, mux: http.NewServeMux(), answers: answers}
	g.mux.HandleFunc("POST /v1/runs", g.handle)
	g.mux.HandleFunc("POST /v1/runs/{runId}/signals", g.handle)
	g.mux.HandleFunc("/v1/", g.handle) // schedules, triggers and plans
	return g
}

func (g *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.mux.ServeHTTP(w, r) }

func (g *fakeGateway) handle(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rec := request{method: r.Method, escapedPath: r.URL.EscapedPath(), query: r.URL.RawQuery, runID: r.PathValue("runId"), header: r.Header.Clone()}
	if err := json.Unmarshal(data, &rec.body); len(data) > 0 && err != nil {
		http.Error(w, "body is not a JSON object", http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	a := g.answers[min(len(g.reqs), len(g.answers)-1)]
	g.reqs = append(g.reqs, rec)
	g.mu.Unlock()
	if a.hang {
		if a.arrived != nil {
			a.arrived()
		}
		<-r.Context().Done()
		return
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

// requests returns a copy of what the gateway received so far.
func (g *fakeGateway) requests() []request {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]request(nil), g.reqs...)
}

// sleepRecorder replaces the client's wait: it records each duration and
// returns at once (with ctx's error, as the real wait would).
type sleepRecorder struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

func (s *sleepRecorder) durations() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// bundle is a fake gateway and a client of it.
type bundle struct {
	gw     *fakeGateway
	srv    *httptest.Server
	client *client.Client
	sleeps *sleepRecorder
}

// setup starts a fake gateway with the answers and a client of it that
// sends testToken, records its waits instead of waiting and draws no jitter.
// opts apply after those.
func setup(t *testing.T, answers []answer, opts ...client.Option) *bundle {
	t.Helper()
	b := &bundle{gw: newFakeGateway(t, answers...), sleeps: &sleepRecorder{}}
	b.srv = httptest.NewServer(b.gw)
	t.Cleanup(b.srv.Close)
	base := []client.Option{client.WithToken(testToken), client.WithSleep(b.sleeps.sleep), client.WithoutJitter()}
	c, err := client.New(b.srv.URL, append(base, opts...)...)
	require.NoError(t, err)
	b.client = c
	return b
}

// requireUUIDv7 asserts that v is a string holding a UUIDv7.
func requireUUIDv7(t *testing.T, v any) string {
	t.Helper()
	s, ok := v.(string)
	require.True(t, ok, "want a string, got %T", v)
	id, err := uuid.Parse(s)
	require.NoError(t, err)
	require.Equal(t, uuid.Version(7), id.Version())
	return s
}

// startReq is a valid start request without a RunRequestID.
func startReq() api.StartRunRequest {
	return api.StartRunRequest{
		TenantID: "tenant-1", ProjectID: "project-1", EnvironmentID: "prod",
		PlanID: "plan-1", PlanVersion: "v1",
		Plan:  json.RawMessage(`{"id":"plan-1"}`),
		Input: json.RawMessage(`{"n":1}`),
	}
}

// startResult is the gateway's answer to startReq.
func startResult(runRequestID string, duplicate bool) api.StartRunResult {
	return api.StartRunResult{RunID: "run-1", RunRequestID: runRequestID, Status: "APPROVED", Duplicate: duplicate}
}

// acceptedResult is the gateway's answer to a signal.
func acceptedResult(runID, name, signalID string) api.AcceptedSignalResult {
	return api.AcceptedSignalResult{
		Accepted: true, WorkflowID: runID, SignalName: name, SignalID: signalID,
		AcceptedAt:       time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		SignalStorageKey: "sig-" + signalID,
	}
}
