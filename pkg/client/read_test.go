package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/events"
)

const testRunID = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"

// readRequest is what the fake read API received.
type readRequest struct {
	method      string
	escapedPath string
	query       url.Values
	header      http.Header
}

// fakeReadAPI stands in for the projector's read API: it records each GET
// and gives the canned answers in order, repeating the last. onRequest, when
// set, runs before each answer with the request's number (1 for the first).
type fakeReadAPI struct {
	mu        sync.Mutex
	answers   []answer
	reqs      []readRequest
	onRequest func(n int)
}

func (f *fakeReadAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	a := f.answers[min(len(f.reqs), len(f.answers)-1)]
	f.reqs = append(f.reqs, readRequest{method: r.Method, escapedPath: r.URL.EscapedPath(), query: r.URL.Query(), header: r.Header.Clone()})
	n, hook := len(f.reqs), f.onRequest
	f.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func (f *fakeReadAPI) requests() []readRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]readRequest(nil), f.reqs...)
}

// readBundle is a fake read API and a client whose read URL it is.
type readBundle struct {
	api    *fakeReadAPI
	client *client.Client
	sleeps *sleepRecorder
}

// setupRead starts a fake read API with the answers and a client of it
// that sends testToken and records its waits instead of waiting. The
// client's gateway URL points nowhere: reads must not go there.
func setupRead(t *testing.T, answers ...answer) *readBundle {
	t.Helper()
	require.NotEmpty(t, answers)
	b := &readBundle{api: &fakeReadAPI{answers: answers}, sleeps: &sleepRecorder{}}
	srv := httptest.NewServer(b.api)
	t.Cleanup(srv.Close)
	c, err := client.New("http://gateway.invalid", client.WithToken(testToken), client.WithReadURL(srv.URL+"/"),
		client.WithSleep(b.sleeps.sleep), client.WithoutJitter())
	require.NoError(t, err)
	b.client = c
	return b
}

// runView is a view of testRunID at seq with status.
func runView(seq int64, status events.RunStatus) api.RunView {
	return api.RunView{
		RunSnapshot: events.RunSnapshot{RunID: testRunID, Status: status, LastEventSeq: seq,
			Steps: []events.StepSnapshot{{StepID: "a", Status: events.StepStatusSuccess, LogicalAttemptID: "1", Artifacts: []events.ArtifactRef{}}}},
		RunIdentity: api.RunIdentity{TenantID: "default", ProjectID: "p", EnvironmentID: "dev", PlanID: "hello", PlanVersion: "1"},
		Plan:        api.RunPlan{Steps: []api.PlanStep{{ID: "a", Kind: "activity", Activity: "echo", DependsOn: []string{}}, {ID: "b", DependsOn: []string{"a"}}}},
	}
}

func TestGetRun(t *testing.T) {
	t.Parallel()
	want := runView(7, events.RunStatusRunning)
	b := setupRead(t, jsonAnswer(t, http.StatusOK, want))

	got, err := b.client.GetRun(context.Background(), testRunID)
	require.NoError(t, err)
	require.Equal(t, want.RunID, got.RunID)
	require.Equal(t, int64(7), got.LastEventSeq)
	require.Equal(t, want.Plan, got.Plan)
	require.Equal(t, "hello", got.PlanID)
	require.Equal(t, 1, got.StepsDone())
	require.Equal(t, 2, got.StepsTotal())

	reqs := b.api.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, http.MethodGet, reqs[0].method)
	require.Equal(t, "/v1/runs/"+testRunID, reqs[0].escapedPath)
	require.Empty(t, reqs[0].query, "a plain get does not wait")
	require.Equal(t, "Bearer "+testToken, reqs[0].header.Get("Authorization"))
}

func TestReadCallsNeedReadURL(t *testing.T) {
	t.Parallel()
	c, err := client.New("http://127.0.0.1:1", client.WithToken(testToken))
	require.NoError(t, err)
	ctx := context.Background()
	_, err = c.GetRun(ctx, testRunID)
	require.ErrorIs(t, err, client.ErrNoReadURL)
	_, err = c.WaitRun(ctx, testRunID, 0)
	require.ErrorIs(t, err, client.ErrNoReadURL)
	_, err = c.ListRuns(ctx, client.RunFilter{})
	require.ErrorIs(t, err, client.ErrNoReadURL)
	_, err = c.RunEvents(ctx, testRunID, 0, 0)
	require.ErrorIs(t, err, client.ErrNoReadURL)
	for _, err := range c.Runs(ctx, client.RunFilter{}) {
		require.ErrorIs(t, err, client.ErrNoReadURL)
	}
}

// WaitRun long-polls past the seq it was given: a 304 and a view that is
// not past it both make it ask again; the first view past it is returned.
func TestWaitRunPollsUntilPastSeq(t *testing.T) {
	t.Parallel()
	b := setupRead(t,
		answer{status: http.StatusNotModified},
		jsonAnswer(t, http.StatusOK, runView(3, events.RunStatusRunning)),
		jsonAnswer(t, http.StatusOK, runView(5, events.RunStatusCompleted)))

	got, err := b.client.WaitRun(context.Background(), testRunID, 3)
	require.NoError(t, err)
	require.Equal(t, int64(5), got.LastEventSeq)
	require.Equal(t, events.RunStatusCompleted, got.Status)

	reqs := b.api.requests()
	require.Len(t, reqs, 3)
	for _, r := range reqs {
		require.Equal(t, "/v1/runs/"+testRunID, r.escapedPath)
		require.Equal(t, "4", r.query.Get("waitForSeq"))
		require.Equal(t, client.DefaultPollTimeout.String(), r.query.Get("timeout"))
		require.Equal(t, `"3", "3-stale"`, r.header.Get("If-None-Match"))
	}
	require.Empty(t, b.sleeps.durations(), "a long poll that answered is not a failure to back off from")
}

// A poll is never held past the context's deadline, and WaitRun ends with
// the context.
func TestWaitRunEndsWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	fake := &fakeReadAPI{answers: []answer{{status: http.StatusNotModified}}, onRequest: func(n int) {
		if n == 2 {
			cancel()
		}
	}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	c, err := client.New("http://gateway.invalid", client.WithToken(testToken), client.WithReadURL(srv.URL),
		client.WithPollTimeout(2*time.Hour))
	require.NoError(t, err)

	_, err = c.WaitRun(ctx, testRunID, 0)
	require.ErrorIs(t, err, context.Canceled)
	reqs := fake.requests()
	require.Len(t, reqs, 2)
	timeout, err := time.ParseDuration(reqs[0].query.Get("timeout"))
	require.NoError(t, err)
	require.LessOrEqual(t, timeout, time.Hour, "the window is cut to the deadline")
	require.Greater(t, timeout, time.Duration(0))
}

func TestWaitRunNotFoundAfterWindow(t *testing.T) {
	t.Parallel()
	b := setupRead(t, errAnswer(t, http.StatusNotFound, api.CodeNotFound, "no run "+testRunID, nil))
	_, err := b.client.WaitRun(context.Background(), testRunID, 0)
	require.True(t, client.IsCode(err, api.CodeNotFound), "got %v", err)
	require.Len(t, b.api.requests(), 1, "a 404 is not retried")
}

func TestReadRetriesUnavailable(t *testing.T) {
	t.Parallel()
	b := setupRead(t,
		errAnswer(t, http.StatusServiceUnavailable, api.CodeUnavailable, "restarting", nil),
		jsonAnswer(t, http.StatusOK, runView(2, events.RunStatusRunning)))
	got, err := b.client.GetRun(context.Background(), testRunID)
	require.NoError(t, err)
	require.Equal(t, int64(2), got.LastEventSeq)
	require.Len(t, b.api.requests(), 2)
	require.Len(t, b.sleeps.durations(), 1)
}

func TestListRunsSendsFilter(t *testing.T) {
	t.Parallel()
	want := api.RunList{Runs: []api.RunSummary{{RunID: testRunID, Status: events.RunStatusFailed, StepsTotal: 3, StepsDone: 1, FailedSteps: 1}}, NextCursor: "c2"}
	b := setupRead(t, jsonAnswer(t, http.StatusOK, want))

	got, err := b.client.ListRuns(context.Background(), client.RunFilter{
		Status: []string{"FAILED", api.StatusStale}, PlanID: "hello", TriggerID: "orders",
		ParentRunID: testRunID, ProjectID: "shop", EnvironmentID: "prod", Limit: 10, Cursor: "c1",
		PlanVersion: "v2", Labels: map[string]string{"team": "data", "env": "prod", "note": ""}, ScheduleID: "nightly",
		RerunOf: testRunID, CreatedAfter: time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC),
		CreatedBefore: time.Date(2026, 1, 3, 0, 0, 0, 0, time.FixedZone("", 3600)),
		EndedAfter:    time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), EndedBefore: time.Date(2026, 1, 4, 0, 0, 0, 0, time.UTC)})
	require.NoError(t, err)
	require.Equal(t, want, *got)
	reqs := b.api.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "/v1/runs", reqs[0].escapedPath)
	require.Equal(t, url.Values{"status": {"FAILED", "STALE"}, "plan": {"hello"}, "trigger": {"orders"},
		"parent": {testRunID}, "projectId": {"shop"}, "environmentId": {"prod"}, "limit": {"10"}, "cursor": {"c1"},
		"planVersion": {"v2"}, "label": {"env=prod", "note=", "team=data"}, "schedule": {"nightly"}, "rerunOf": {testRunID},
		"createdAfter": {"2026-01-02T03:04:05.0000006Z"}, "createdBefore": {"2026-01-03T00:00:00+01:00"},
		"endedAfter": {"2026-01-02T00:00:00Z"}, "endedBefore": {"2026-01-04T00:00:00Z"}}, reqs[0].query)
}

func TestRunsFollowsCursors(t *testing.T) {
	t.Parallel()
	b := setupRead(t,
		jsonAnswer(t, http.StatusOK, api.RunList{Runs: []api.RunSummary{{RunID: "r1"}, {RunID: "r2"}}, NextCursor: "next"}),
		jsonAnswer(t, http.StatusOK, api.RunList{Runs: []api.RunSummary{{RunID: "r3"}}}))

	var ids []string
	for r, err := range b.client.Runs(context.Background(), client.RunFilter{Limit: 2}) {
		require.NoError(t, err)
		ids = append(ids, r.RunID)
	}
	require.Equal(t, []string{"r1", "r2", "r3"}, ids)
	reqs := b.api.requests()
	require.Len(t, reqs, 2)
	require.Empty(t, reqs[0].query.Get("cursor"))
	require.Equal(t, "next", reqs[1].query.Get("cursor"))
	require.Equal(t, "2", reqs[1].query.Get("limit"))
}

func TestRunsYieldsPageError(t *testing.T) {
	t.Parallel()
	b := setupRead(t, errAnswer(t, http.StatusForbidden, api.CodePermissionDenied, "other tenant", nil))
	n := 0
	for _, err := range b.client.Runs(context.Background(), client.RunFilter{}) {
		n++
		require.True(t, client.IsCode(err, api.CodePermissionDenied), "got %v", err)
	}
	require.Equal(t, 1, n)
}

func TestRunEvents(t *testing.T) {
	t.Parallel()
	want := api.EventPage{Events: []events.Event{{RunID: testRunID, RunSeq: 4, EventType: events.StepStarted, StepID: "a"}}, NextAfterSeq: 4, More: true}
	b := setupRead(t, jsonAnswer(t, http.StatusOK, want))

	got, err := b.client.RunEvents(context.Background(), testRunID, 3, 1)
	require.NoError(t, err)
	require.Equal(t, want.NextAfterSeq, got.NextAfterSeq)
	require.True(t, got.More)
	require.Len(t, got.Events, 1)
	require.Equal(t, events.StepStarted, got.Events[0].EventType)
	reqs := b.api.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "/v1/runs/"+testRunID+"/events", reqs[0].escapedPath)
	require.Equal(t, url.Values{"afterSeq": {"3"}, "limit": {"1"}}, reqs[0].query)
}

func TestReadRefusesBadRequestLocally(t *testing.T) {
	t.Parallel()
	b := setupRead(t, jsonAnswer(t, http.StatusOK, runView(1, events.RunStatusRunning)))
	ctx := context.Background()
	for _, id := range []string{"", ".", ".."} {
		_, err := b.client.GetRun(ctx, id)
		require.ErrorIs(t, err, client.ErrInvalidRequest)
		_, err = b.client.WaitRun(ctx, id, 0)
		require.ErrorIs(t, err, client.ErrInvalidRequest)
		_, err = b.client.RunEvents(ctx, id, 0, 0)
		require.ErrorIs(t, err, client.ErrInvalidRequest)
	}
	_, err := b.client.WaitRun(ctx, testRunID, -1)
	require.ErrorIs(t, err, client.ErrInvalidRequest)
	require.Empty(t, b.api.requests())
}

func TestReadOptionsValidate(t *testing.T) {
	t.Parallel()
	for name, opt := range map[string]client.Option{
		"read URL without scheme": client.WithReadURL("localhost:8081"),
		"read URL with query":     client.WithReadURL("http://localhost:8081?a=b"),
		"zero poll timeout":       client.WithPollTimeout(0),
		"negative poll timeout":   client.WithPollTimeout(-time.Second),
	} {
		c, err := client.New("http://localhost:8080", opt)
		require.ErrorIs(t, err, client.ErrInvalidConfig, name)
		require.Nil(t, c, name)
	}
}

// The error of a read for a run the key cannot see carries the read API's
// code, as a gateway error does.
func TestGetRunNotFound(t *testing.T) {
	t.Parallel()
	b := setupRead(t, errAnswer(t, http.StatusNotFound, api.CodeNotFound, "no run "+testRunID, nil))
	_, err := b.client.GetRun(context.Background(), testRunID)
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, http.StatusNotFound, e.Status)
	require.Equal(t, "no run "+testRunID, e.Message)
}
