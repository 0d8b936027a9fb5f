package projector_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/keylimit"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/projector"
)

// probe is one live request of checkAnswers and the status it must get.
type probe struct {
	route, path, token string
	header             []string // key-value pairs
	status             int
}

// checkAnswers sends every route requests that answer each of its common
// statuses, with runs that fill the schemas: a forEach step with a child,
// a skipped step, input and output, artifacts, a gap and its alert. Each
// answer must be what the document says of its route and status
// (docValidator.check), and every read API route must be seen answering
// 200, 400 and 401.
func checkAnswers(t *testing.T, s *stack, v *docValidator) {
	rich := s.richRun(t)
	done := s.completed(t, "oa")
	stale := s.approve(t, "oa-gap")
	s.waitRun(t, stale, atSeq(1), "approved")
	s.publishAhead(t, stale, 1)
	s.waitRun(t, stale, func(v api.RunView) bool { return v.Stale }, "goes STALE")
	require.Eventually(t, func() bool { return len(s.alertsFor(t, readerToken)) > 0 }, waitFor, 10*time.Millisecond)
	var first api.RunList
	s.fetch(t, readerToken, "/v1/runs?limit=1").decode(t, &first)
	require.NotEmpty(t, first.NextCursor)

	const list, run, evs = "GET /v1/runs", "GET /v1/runs/{runId}", "GET /v1/runs/{runId}/events"
	const stepRoute, kids = "GET /v1/runs/{runId}/steps/{stepId}", "GET /v1/runs/{runId}/steps/{stepId}/children"
	const alerts, whoami = "GET /v1/alerts", "GET /v1/whoami"
	missing := events.NewRunID()
	r := readerToken
	probes := []probe{
		{route: list, path: "/v1/runs", token: r, status: http.StatusOK},
		{route: list, path: "/v1/runs?status=COMPLETED,RUNNING&status=STALE&projectId=proj&environmentId=dev&plan=oa&limit=5", token: r, status: http.StatusOK},
		{route: list, path: "/v1/runs?limit=1&cursor=" + url.QueryEscape(first.NextCursor), token: r, status: http.StatusOK},
		{route: list, path: "/v1/runs?stauts=FAILED", token: r, status: http.StatusBadRequest},
		{route: list, path: "/v1/runs?limit=1&limit=2", token: r, status: http.StatusBadRequest},
		{route: list, path: "/v1/runs?tenant=other", token: r, status: http.StatusForbidden},
		{route: list, path: "/v1/runs", status: http.StatusUnauthorized},
		{route: run, path: "/v1/runs/" + rich, token: r, status: http.StatusOK},
		{route: run, path: "/v1/runs/" + rich + "?steps=all", token: r, status: http.StatusOK},
		{route: run, path: "/v1/runs/" + done, token: r, status: http.StatusOK},
		{route: run, path: "/v1/runs/" + stale, token: r, status: http.StatusOK},
		{route: run, path: "/v1/runs/" + done + "?waitForSeq=1&timeout=0s", token: r, status: http.StatusOK},
		{route: run, path: "/v1/runs/" + done, token: r, header: []string{"If-None-Match", `"6"`}, status: http.StatusNotModified},
		{route: run, path: "/v1/runs/" + missing, token: r, status: http.StatusNotFound},
		{route: run, path: "/v1/runs/not-a-uuid", token: r, status: http.StatusBadRequest},
		{route: run, path: "/v1/runs/" + done + "?step=all", token: r, status: http.StatusBadRequest},
		{route: run, path: "/v1/runs/" + done, status: http.StatusUnauthorized},
		{route: evs, path: "/v1/runs/" + rich + "/events?limit=3", token: r, status: http.StatusOK},
		{route: evs, path: "/v1/runs/" + done + "/events", token: r, status: http.StatusOK},
		{route: evs, path: "/v1/runs/" + missing + "/events", token: r, status: http.StatusNotFound},
		{route: evs, path: "/v1/runs/" + done + "/events?after=1", token: r, status: http.StatusBadRequest},
		{route: evs, path: "/v1/runs/" + done + "/events", status: http.StatusUnauthorized},
		{route: stepRoute, path: "/v1/runs/" + rich + "/steps/a", token: r, status: http.StatusOK},
		{route: stepRoute, path: "/v1/runs/" + rich + "/steps/b", token: r, status: http.StatusOK},
		{route: stepRoute, path: "/v1/runs/" + rich + "/steps/each", token: r, status: http.StatusOK},
		{route: stepRoute, path: "/v1/runs/" + rich + "/steps/" + url.PathEscape("each[0]"), token: r, status: http.StatusOK},
		{route: stepRoute, path: "/v1/runs/" + missing + "/steps/a", token: r, status: http.StatusNotFound},
		{route: stepRoute, path: "/v1/runs/" + rich + "/steps/a?limit=1", token: r, status: http.StatusBadRequest},
		{route: stepRoute, path: "/v1/runs/" + rich + "/steps/a", status: http.StatusUnauthorized},
		{route: kids, path: "/v1/runs/" + rich + "/steps/each/children", token: r, status: http.StatusOK},
		{route: kids, path: "/v1/runs/" + rich + "/steps/each/children?limit=0", token: r, status: http.StatusBadRequest},
		{route: kids, path: "/v1/runs/" + missing + "/steps/each/children", token: r, status: http.StatusNotFound},
		{route: kids, path: "/v1/runs/" + rich + "/steps/each/children", status: http.StatusUnauthorized},
		{route: alerts, path: "/v1/alerts", token: r, status: http.StatusOK},
		{route: alerts, path: "/v1/alerts?runId=" + stale, token: r, status: http.StatusBadRequest},
		{route: alerts, path: "/v1/alerts", status: http.StatusUnauthorized},
		{route: whoami, path: "/v1/whoami", token: r, status: http.StatusOK},
		{route: whoami, path: "/v1/whoami", token: operatorToken, status: http.StatusOK},
		{route: whoami, path: "/v1/whoami?key=x", token: r, status: http.StatusBadRequest},
		{route: whoami, path: "/v1/whoami", token: r, header: []string{"Authorization", "Bearer " + otherToken}, status: http.StatusBadRequest},
		{route: whoami, path: "/v1/whoami", status: http.StatusUnauthorized},
		{route: "GET /openapi.json", path: "/openapi.json", status: http.StatusOK},
		{route: "GET /healthz", path: "/healthz", status: http.StatusOK},
	}
	seen := map[string][]int{}
	for _, p := range probes {
		a := s.fetchAdding(t, p.token, p.path, p.header...)
		require.Equal(t, p.status, a.status, "GET %s: %s", p.path, a.body)
		v.check(t, p.route, a)
		seen[p.route] = append(seen[p.route], a.status)
	}
	for route := range projector.ReadRoutes() {
		for _, status := range []int{http.StatusOK, http.StatusBadRequest, http.StatusUnauthorized} {
			require.Contains(t, seen[route], status, "%s is not seen answering %d", route, status)
		}
	}
	for _, route := range metaRoutes {
		require.True(t, slices.Contains(seen[route], http.StatusOK), "%s is not probed", route)
	}
}

// checkRateLimited requires every read API route of a key past its rate
// to answer 429 as the document says, Retry-After included.
func checkRateLimited(t *testing.T, v *docValidator) {
	s := newStack(t)
	s.serve(t, projector.Config{KeyRate: keylimit.Limit{Rate: 0.001, Burst: 1}}) // a token per 1000 s
	require.Equal(t, http.StatusOK, s.fetch(t, readerToken, "/v1/whoami").status, "the bucket's one token")
	paths := strings.NewReplacer("{runId}", uuid.NewString(), "{stepId}", "a")
	for route := range projector.ReadRoutes() {
		_, tmpl, _ := strings.Cut(route, " ")
		a := s.fetch(t, readerToken, paths.Replace(tmpl))
		require.Equal(t, http.StatusTooManyRequests, a.status, "%s: %s", route, a.body)
		v.check(t, route, a)
	}
}

// fetchAdding is fetch with the header's pairs added, not set, so that a
// request may carry two Authorization headers.
func (s *stack) fetchAdding(t *testing.T, token, path string, header ...string) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Add("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	a := send(req)
	require.NoError(t, a.err)
	return a
}

// richRun approves a run whose view fills most of the schemas (input,
// artifacts, a skipped step, a forEach step with a running child and a
// failed attempt) and returns its id once its snapshot has every event.
func (s *stack) richRun(t *testing.T) string {
	t.Helper()
	runID := s.approveWith(t, `{"planId":"oa","planVersion":"v1","steps":[
		{"id":"a","activity":"echo","input":{"static":1}},{"id":"b","activity":"echo","dependsOn":["a"]}]}`, json.RawMessage(`{"items":[1,2]}`))
	started := events.StepStartedData{WorkerID: "w-1"}
	s.appendBus(t,
		step(t, runID, "", events.RunStarted, nil),
		step(t, runID, "a", events.StepScheduled, events.StepScheduledData{Activity: "echo"}),
		step(t, runID, "a", events.StepStarted, started),
		step(t, runID, "a", events.StepCompleted, events.StepCompletedData{Output: json.RawMessage(`{"sum":3}`),
			Artifacts: []events.ArtifactRef{{URI: "s3://b/k", Kind: "report", SHA256: "ab", SizeBytes: 7}}}),
		step(t, runID, "b", events.StepSkipped, map[string]string{"reason": "CONDITION_FALSE", "condition": "b"}),
		step(t, runID, "each", events.StepScheduled, events.StepScheduledData{Activity: "echo", Input: json.RawMessage(`[1,2]`),
			ForEach: &events.ForEachData{Count: 2, MaxParallel: 1}}),
		step(t, runID, "each[0]", events.StepScheduled, events.StepScheduledData{Activity: "echo", Input: json.RawMessage(`{"item":1}`)}),
		step(t, runID, "each[0]", events.StepStarted, started),
		step(t, runID, "each[0]", events.StepFailed, events.StepFailedData{Error: events.StepError{Code: "BOOM", Message: "no", Retryable: true}}),
	)
	s.waitRun(t, runID, atSeq(10), "the steps' events applied")
	return runID
}
