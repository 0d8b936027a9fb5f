package projector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/services/projector"
)

// The runs list is newest first and each filter keeps exactly its runs.
func TestRunsListFilters(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	done := s.completed(t, "alpha")
	approved := s.approve(t, "beta")
	s.waitRun(t, approved, atSeq(1), "approved")
	running := s.approve(t, "alpha")
	s.appendBus(t, lifecycle(t, running)[:1]...)
	s.waitRun(t, running, atSeq(2), "running")
	stale := s.approve(t, "gamma") // APPROVED, and STALE
	s.waitRun(t, stale, atSeq(1), "approved")
	s.publishAhead(t, stale, 1)
	s.waitRun(t, stale, func(v api.RunView) bool { return v.Stale }, "goes STALE")

	for query, want := range map[string][]string{
		"":                               {stale, running, approved, done},
		"tenant=acme":                    {stale, running, approved, done},
		"status=COMPLETED":               {done},
		"status=RUNNING&status=APPROVED": {stale, running, approved},
		"status=RUNNING,%20COMPLETED":    {running, done},
		"status=STALE":                   {stale},
		"status=STALE,COMPLETED":         {stale, done},
		"status=CANCELLED":               {},
		"plan=alpha":                     {running, done},
		"plan=alpha&status=RUNNING":      {running},
		"plan=alph":                      {},
	} {
		require.Equal(t, want, runIDs(s.list(t, readerToken, query).Runs), "GET /v1/runs?%s", query)
	}

	var raw struct {
		Runs []map[string]json.RawMessage `json:"runs"`
	}
	s.fetch(t, readerToken, "/v1/runs?plan=beta").decode(t, &raw)
	require.Len(t, raw.Runs, 1)
	for _, field := range []string{"startedAt", "completedAt", "totalDurationMs"} {
		require.JSONEq(t, "null", string(raw.Runs[0][field]), "%s of a run not started", field)
	}

	runs := s.list(t, readerToken, "").Runs
	sum := runs[slices.IndexFunc(runs, func(r api.RunSummary) bool { return r.RunID == done })]
	v, _ := s.run(t, done)
	require.Equal(t, events.RunStatusCompleted, sum.Status)
	require.Equal(t, 2, sum.StepsTotal, "the plan's steps")
	require.Equal(t, 1, sum.StepsDone, "a is SUCCESS, b never ran")
	require.Equal(t, int64(6), sum.LastEventSeq)
	require.Equal(t, "alpha", sum.PlanID)
	require.Equal(t, tenant, sum.TenantID)
	require.NotNil(t, sum.StartedAt)
	require.NotNil(t, sum.CompletedAt)
	require.True(t, sum.StartedAt.Equal(*v.StartedAt), "startedAt %v, the snapshot's %v", sum.StartedAt, v.StartedAt)
	require.True(t, sum.CompletedAt.Equal(*v.CompletedAt), "completedAt %v, the snapshot's %v", sum.CompletedAt, v.CompletedAt)
	require.Equal(t, v.TotalDurationMs, sum.TotalDurationMs)
	require.True(t, runs[0].Stale, "the first run is the stale one")
	require.False(t, sum.Stale)
	require.Empty(t, s.list(t, otherToken, "").Runs, "another tenant sees none of them")
}

// Walking the pages with nextCursor yields every run once, in order, for
// any page size; a page with a nextCursor is full, and the last has none.
func TestRunsListPages(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	var newestFirst, odd []string
	for i := range 5 {
		p := []string{"even", "odd"}[i%2]
		runID := s.approve(t, p)
		s.waitRun(t, runID, atSeq(1), "approved")
		newestFirst = slices.Insert(newestFirst, 0, runID)
		if p == "odd" {
			odd = slices.Insert(odd, 0, runID)
		}
	}
	for limit := 1; limit <= 6; limit++ {
		require.Equal(t, newestFirst, s.walk(t, "", limit), "limit %d", limit)
		require.Equal(t, odd, s.walk(t, "plan=odd", limit), "plan=odd, limit %d", limit)
	}
}

// A run's answer carries its watermark as ETag, and a matching
// If-None-Match is answered 304 with no body; a stale run's tag differs.
func TestRunETag(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.completed(t, "etag")
	path := "/v1/runs/" + runID

	r := s.fetch(t, readerToken, path)
	var v api.RunView
	r.decode(t, &v)
	require.Equal(t, `"6"`, r.header.Get("ETag"))
	require.Equal(t, "no-cache", r.header.Get("Cache-Control"))
	require.False(t, v.Stale)
	require.Nil(t, v.Gap)
	require.Equal(t, tenant, v.TenantID)
	require.Equal(t, "proj", v.ProjectID)
	require.Equal(t, "dev", v.EnvironmentID)
	require.Equal(t, "v1", v.PlanVersion)
	require.GreaterOrEqual(t, v.LagMs, int64(0))
	require.False(t, v.UpdatedAt.Before(v.CreatedAt))
	require.Equal(t, []api.PlanStep{{ID: "a", Activity: "echo", Kind: "activity", DependsOn: []string{}},
		{ID: "b", Activity: "echo", Kind: "activity", DependsOn: []string{"a"}}}, v.Plan.Steps)
	require.Len(t, v.Steps, 1)
	require.Equal(t, events.StepStatusSuccess, v.Steps[0].Status)
	require.Equal(t, []events.ArtifactRef{{URI: "s3://b/k", Kind: "report"}}, v.Steps[0].Artifacts)
	require.Equal(t, v.Steps[0].Artifacts, v.Artifacts)
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(r.body, &raw))
	for _, field := range []string{"stale", "tenantId", "lagMs", "plan", "steps", "artifacts", "createdAt", "updatedAt"} {
		require.Contains(t, raw, field)
	}

	notModified := s.fetch(t, readerToken, path, "If-None-Match", `"6"`)
	require.Equal(t, http.StatusNotModified, notModified.status)
	require.Empty(t, notModified.body)
	require.Equal(t, `"6"`, notModified.header.Get("ETag"))
	require.Equal(t, http.StatusOK, s.fetch(t, readerToken, path, "If-None-Match", `"5"`).status)
	for _, match := range []string{`"5", "6"`, `W/"6"`, `*`} { // a list, a weak tag, any
		require.Equal(t, http.StatusNotModified, s.fetch(t, readerToken, path, "If-None-Match", match).status, match)
	}
	require.Equal(t, http.StatusOK, s.fetch(t, readerToken, path, "If-None-Match", `"5", W/"7"`).status)

	staleRun := s.approve(t, "etag-stale")
	s.waitRun(t, staleRun, atSeq(1), "approved")
	s.publishAhead(t, staleRun, 1)
	s.waitRun(t, staleRun, func(v api.RunView) bool { return v.Stale }, "goes STALE")
	path = "/v1/runs/" + staleRun
	r = s.fetch(t, readerToken, path)
	r.decode(t, &v)
	require.Equal(t, `"1-stale"`, r.header.Get("ETag"))
	require.True(t, v.Stale)
	require.Equal(t, &api.RunGap{AfterSeq: 1, SeenSeq: 3, Since: v.Gap.Since}, v.Gap)
	require.Equal(t, http.StatusOK, s.fetch(t, readerToken, path, "If-None-Match", `"1"`).status)
	require.Equal(t, http.StatusNotModified, s.fetch(t, readerToken, path, "If-None-Match", `"1-stale"`).status)
}

// The events of a run come from the log in runSeq order, page by page.
func TestRunEventsPages(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.completed(t, "history")
	want, err := s.log.EventsFetchAfter(t.Context(), runID, 0, 0)
	require.NoError(t, err)
	require.Len(t, want, 6)
	path := "/v1/runs/" + runID + "/events"

	var all api.EventPage
	s.fetch(t, readerToken, path).decode(t, &all)
	requireSameEvents(t, want, all.Events)
	require.False(t, all.More)
	require.Equal(t, int64(6), all.NextAfterSeq)
	for _, ev := range all.Events {
		if ev.EventType == events.RunApproved || ev.EventType == events.StepScheduled {
			require.NotEmpty(t, ev.EventData, "runSeq %d", ev.RunSeq)
		}
	}

	for _, limit := range []int{1, 4, 5, 6, 7} {
		var got []events.Event
		after := int64(0)
		for more := true; more; {
			var page api.EventPage
			s.fetch(t, readerToken, fmt.Sprintf("%s?afterSeq=%d&limit=%d", path, after, limit)).decode(t, &page)
			got = append(got, page.Events...)
			more = page.More
			require.Equal(t, len(got) < len(want), more, "limit %d, afterSeq %d: more", limit, after)
			if more {
				require.Len(t, page.Events, limit, "a page with more is full")
			}
			require.Equal(t, int64(len(got)), page.NextAfterSeq, "the last runSeq returned")
			require.LessOrEqual(t, len(got), len(want), "limit %d: no page past the end", limit)
			after = page.NextAfterSeq
		}
		requireSameEvents(t, want, got)
	}

	past := s.fetch(t, readerToken, path+"?afterSeq=6")
	require.Equal(t, http.StatusOK, past.status)
	require.JSONEq(t, `{"events":[],"nextAfterSeq":6,"more":false}`, string(past.body))
}

// reply is one answer of the projector, its body read.
type reply struct {
	status int
	header http.Header
	body   []byte
	err    error // the request failed
}

// send does req and reads the answer.
func send(req *http.Request) reply {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: body, err: err}
}

// do sends method path to the projector with body (none when empty) and
// the header's key-value pairs.
func (s *stack) do(t *testing.T, method, path, body string, header ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, s.url+path, rd)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	r := send(req)
	require.NoError(t, r.err)
	return r
}

// fetch GETs path with token (no Authorization when empty) and the
// header's key-value pairs.
func (s *stack) fetch(t *testing.T, token, path string, header ...string) reply {
	t.Helper()
	if token != "" {
		header = append(header, "Authorization", "Bearer "+token)
	}
	return s.do(t, http.MethodGet, path, "", header...)
}

// decode asserts r is a 200 and decodes its body into out.
func (r reply) decode(t *testing.T, out any) {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.NoError(t, json.Unmarshal(r.body, out))
}

// requireError asserts r is a JSON error answer of status and code, in
// the shape of api.ErrorBody and nothing else, whose message holds each
// of parts.
func requireError(t *testing.T, r reply, status int, code string, parts ...string) {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	dec := json.NewDecoder(strings.NewReader(string(r.body)))
	dec.DisallowUnknownFields()
	var body api.ErrorBody
	require.NoError(t, dec.Decode(&body), "body: %s", r.body)
	require.Equal(t, code, body.Error.Code, "body: %s", r.body)
	require.NotEmpty(t, body.Error.Message)
	for _, p := range parts {
		require.Contains(t, body.Error.Message, p)
	}
}

// startPoll GETs path as readerToken in the background, with a deadline
// of waitFor, and returns once the request is written; its answer arrives
// on the channel.
func (s *stack) startPoll(t *testing.T, path string, headerPairs ...string) <-chan reply {
	t.Helper()
	written := make(chan struct{})
	var once sync.Once
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(written) }) }}
	ctx, cancel := context.WithTimeout(httptrace.WithClientTrace(t.Context(), trace), waitFor)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+readerToken)
	for i := 0; i+1 < len(headerPairs); i += 2 {
		req.Header.Add(headerPairs[i], headerPairs[i+1])
	}
	answer := make(chan reply, 1)
	go func() {
		defer cancel()
		answer <- send(req)
	}()
	select {
	case <-written:
	case r := <-answer:
		require.NoError(t, r.err)
		answer <- r // answered before it was written in full: let the caller see it
	}
	return answer
}

// poll GETs path as a long poll with a deadline of waitFor.
func (s *stack) poll(t *testing.T, path string) reply {
	t.Helper()
	r := <-s.startPoll(t, path)
	require.NoError(t, r.err)
	return r
}

// requireWaiting asserts the long poll has not answered yet.
func requireWaiting(t *testing.T, answer <-chan reply) {
	t.Helper()
	select {
	case r := <-answer:
		t.Fatalf("the long poll answered before anything changed: %d %s %v", r.status, r.body, r.err)
	default:
	}
}

// completed approves a run of planID and takes it through lifecycle; it
// returns once the snapshot is at runSeq 6.
func (s *stack) completed(t *testing.T, planID string) string {
	t.Helper()
	runID := s.approve(t, planID)
	s.appendBus(t, lifecycle(t, runID)...)
	s.waitRun(t, runID, atSeq(6), "completes")
	return runID
}

// approveAs approves a run with the given id, as approve does.
func (s *stack) approveAs(t *testing.T, runID string) {
	t.Helper()
	p, err := plan.ParseValidated([]byte(`{"planId":"later","planVersion":"v1","steps":[{"id":"a","activity":"echo"}]}`), plan.Limits{})
	require.NoError(t, err)
	err = pgx.BeginFunc(t.Context(), s.db.Pool, func(tx pgx.Tx) error {
		_, err := runstart.Approver{Journal: s.journal}.ApproveTx(t.Context(), tx,
			runstart.Request{Plan: p, TenantID: tenant, ProjectID: "proj", EnvironmentID: "dev", RunID: runID})
		return err
	})
	require.NoError(t, err)
}

// publishAhead puts in the log and on the bus an event of the run past a
// gap in the log: runSeq afterSeq+2, where the log holds afterSeq. The run
// goes STALE.
func (s *stack) publishAhead(t *testing.T, runID string, afterSeq int64) {
	t.Helper()
	s.openLogGap(t, runID, afterSeq)
}

// list GETs one page of /v1/runs?query with token.
func (s *stack) list(t *testing.T, token, query string) api.RunList {
	t.Helper()
	var l api.RunList
	s.fetch(t, token, "/v1/runs?limit=200&"+query).decode(t, &l)
	return l
}

// walk lists /v1/runs?query page by page, limit runs a page, and returns
// the run ids in the order given.
func (s *stack) walk(t *testing.T, query string, limit int) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for {
		var page struct {
			Runs       []api.RunSummary `json:"runs"`
			NextCursor *string          `json:"nextCursor"`
		}
		s.fetch(t, readerToken, fmt.Sprintf("/v1/runs?limit=%d&cursor=%s&%s", limit, url.QueryEscape(cursor), query)).
			decode(t, &page)
		if cursor != "" {
			require.NotEmpty(t, page.Runs, "a nextCursor was given with no run after it")
		}
		ids = append(ids, runIDs(page.Runs)...)
		if page.NextCursor == nil {
			require.LessOrEqual(t, len(page.Runs), limit)
			return ids
		}
		require.Len(t, page.Runs, limit, "a page with a nextCursor is full")
		require.NotEmpty(t, *page.NextCursor)
		require.Less(t, len(ids), 100, "the pages do not end")
		cursor = *page.NextCursor
	}
}

func runIDs(runs []api.RunSummary) []string {
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.RunID
	}
	return ids
}

// requireSameEvents compares events by what the log stored.
func requireSameEvents(t *testing.T, want, got []events.Event) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		require.Equal(t, w.RunSeq, g.RunSeq)
		require.Equal(t, w.EventID, g.EventID)
		require.Equal(t, w.EventType, g.EventType)
		require.Equal(t, w.IdempotencyKey, g.IdempotencyKey)
		require.True(t, w.PersistedAt.Equal(g.PersistedAt), "runSeq %d persistedAt", w.RunSeq)
		if len(w.EventData) > 0 {
			require.JSONEq(t, string(w.EventData), string(g.EventData), "runSeq %d", w.RunSeq)
		} else {
			require.Empty(t, g.EventData)
		}
	}
}
