package projector_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/weftrun/weft/internal/policy/keylimit"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/projector"
)

// forEachRun approves a run of acme with step "a" and forEach step "each"
// of n elements, schedules every child, and waits until the projector has
// applied it all.
func (s *stack) forEachRun(t *testing.T, n int) string {
	t.Helper()
	runID := s.approveWith(t, `{"planId":"fan","planVersion":"v1","steps":[
		{"id":"a","activity":"echo"},{"id":"each","activity":"echo","dependsOn":["a"]}]}`, nil)
	evs := []events.Event{step(t, runID, "", events.RunStarted, nil),
		step(t, runID, "each", events.StepScheduled, events.StepScheduledData{Activity: "echo",
			ForEach: &events.ForEachData{Count: n, MaxParallel: n}})}
	for i := range n {
		evs = append(evs, step(t, runID, events.ChildStepID("each", i), events.StepScheduled, events.StepScheduledData{Activity: "echo"}))
	}
	s.appendBus(t, evs...)
	s.waitRun(t, runID, atSeq(int64(len(evs)+1)), "the children scheduled")
	return runID
}

// TestRunViewDefaultsToTopSteps: GET /v1/runs/{runId} answers the top-level
// steps unless asked for steps=all, which lists the children too; both
// count the same steps done.
func TestRunViewDefaultsToTopSteps(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	runID := s.forEachRun(t, 3)

	var def, top, all api.RunView
	s.fetch(t, readerToken, "/v1/runs/"+runID).decode(t, &def)
	s.fetch(t, readerToken, "/v1/runs/"+runID+"?steps=top").decode(t, &top)
	s.fetch(t, readerToken, "/v1/runs/"+runID+"?steps=all").decode(t, &all)
	require.Equal(t, []string{"each"}, stepIDs(def.Steps), "step a has no snapshot yet; the children are left out")
	require.Equal(t, def.Steps, top.Steps)
	require.Equal(t, []string{"each", "each[0]", "each[1]", "each[2]"}, stepIDs(all.Steps))
	require.Equal(t, all.StepsDone(), def.StepsDone())
	s.requireMatchesLog(t, all)
}

// MaxChildrenPage caps a page of children: at the cap the page is served,
// one over is refused with 400 InvalidArgument naming the field; the
// default cap is DefaultMaxChildrenPage.
func TestChildrenPageMax(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{MaxChildrenPage: 3})
	runID := s.forEachRun(t, 4)
	children := "/v1/runs/" + runID + "/steps/each/children"

	var page api.ChildPage
	s.fetch(t, readerToken, children+"?limit=3").decode(t, &page)
	require.Len(t, page.Children, 3)
	require.True(t, page.More)
	s.fetch(t, readerToken, children).decode(t, &page)
	require.Len(t, page.Children, 3, "the default page (100) is held to the cap")
	requireFieldError(t, s.fetch(t, readerToken, children+"?limit=4"), "limit", `limit "4"`, "1 to 3")
	requireFieldError(t, s.fetch(t, readerToken, children+"?afterIndex=-2"), "afterIndex", `afterIndex "-2"`)

	s.serveWith(t, projector.Config{}, sdkmetric.NewMeterProvider())
	maxPage := strconv.Itoa(projector.DefaultMaxChildrenPage)
	s.fetch(t, readerToken, children+"?limit="+maxPage).decode(t, &page)
	require.Len(t, page.Children, 4)
	requireFieldError(t, s.fetch(t, readerToken, children+"?limit="+strconv.Itoa(projector.DefaultMaxChildrenPage+1)),
		"limit", "1 to "+maxPage)
}

// StepsPerToken weights the key rate by the steps an answer holds: with
// a burst of 10 and 2 steps a token, a view of 7 steps costs 4, so the
// key reading it is refused (429, Retry-After) at its third read, while a
// key of the same tenant reading the 1-step top view makes 10 reads before
// its first refusal, and a key of another tenant is not touched. A page
// of 4 children costs 2.
func TestReadCostWeightsKeyRate(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serveWith(t, projector.Config{KeyRate: keylimit.Off}, sdkmetric.NewMeterProvider())
	runID := s.forEachRun(t, 6)
	s.serve(t, projector.Config{KeyRate: keylimit.Limit{Rate: 0.001, Burst: 10}, StepsPerToken: 2}) // a token per 1000 s
	all, top := "/v1/runs/"+runID+"?steps=all", "/v1/runs/"+runID

	for i := range 2 {
		require.Equal(t, http.StatusOK, s.fetch(t, readerToken, all).status, "read %d: 4 tokens of 10", i+1)
	}
	r := s.fetch(t, readerToken, all)
	requireRefused(t, r, `"reader"`, "7 steps costs 4 requests", "one more per 2 steps")
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err)
	require.Greater(t, secs, 1000, "Retry-After %d: three tokens take 3000 s", secs)
	require.Equal(t, int64(1), s.refused(t, "key_rate"))

	for i := range 10 {
		require.Equal(t, http.StatusOK, s.fetch(t, operatorToken, top).status, "read %d of 10", i+1)
	}
	requireRefused(t, s.fetch(t, operatorToken, top), `"operator"`)
	require.Equal(t, http.StatusOK, s.fetch(t, otherToken, "/v1/runs").status, "another tenant's key has its own bucket")

	s.serveWith(t, projector.Config{KeyRate: keylimit.Limit{Rate: 0.001, Burst: 5}, StepsPerToken: 2}, sdkmetric.NewMeterProvider())
	children := "/v1/runs/" + runID + "/steps/each/children?limit=4"
	require.Equal(t, http.StatusOK, s.fetch(t, readerToken, children).status, "2 tokens of 5")
	require.Equal(t, http.StatusOK, s.fetch(t, readerToken, children).status, "2 more: 1 left")
	requireRefused(t, s.fetch(t, readerToken, children), `"reader"`, "4 steps costs 2 requests")
}

// requireFieldError asserts r is a 400 InvalidArgument whose
// details.field is field.
func requireFieldError(t *testing.T, r reply, field string, parts ...string) {
	t.Helper()
	requireError(t, r, http.StatusBadRequest, api.CodeInvalidArgument, parts...)
	var body api.ErrorBody
	require.NoError(t, json.Unmarshal(r.body, &body))
	require.Equal(t, field, body.Error.Details["field"])
}

func stepIDs(steps []events.StepSnapshot) []string {
	ids := make([]string, len(steps))
	for i, st := range steps {
		ids[i] = st.StepID
	}
	return ids
}
