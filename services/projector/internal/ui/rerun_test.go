package ui_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
)

// rerunOffered waits until the run page knows whether its steps offer a
// rerun (GET /v1/whoami has answered and the run is drawn) and returns
// the steps that offer one.
func rerunOffered(b *bundle) []string {
	b.t.Helper()
	b.waitFor(`document.querySelector('[data-testid="steps-card"]')?.dataset.rerun !== 'unknown' && document.querySelectorAll('[data-testid="step"]').length > 0`)
	return eval[[]string](b, `[...document.querySelectorAll('[data-testid="btn-rerun-step"]')].map(b => b.dataset.stepId)`)
}

// A rerun's page names its source and the step it reruns from, linking to
// the source; each step it did not run is marked reused, linking to the
// run it was copied from; a step that ran is not. Every step of an ended
// run offers "Rerun from here" to an operator, none of a run that has not
// ended, and none to a viewer.
func TestRerunMarks(t *testing.T) {
	t.Parallel()
	now := time.Now()
	src := simpleRun(runID(501), events.RunStatusCompleted, now.Add(-time.Hour))
	rerun := simpleRun(runID(502), events.RunStatusCompleted, now)
	rerun.RerunOf = &events.RunRerun{RunID: src.RunID, FromStepID: "shout"}
	rerun.Steps[0].ReusedFrom = &events.EventRef{RunID: src.RunID, RunSeq: 4}
	running := simpleRun(runID(503), events.RunStatusRunning, now)
	b := setup(t, src, rerun, running)

	b.open("/runs/" + rerun.RunID)
	b.do(chromedp.WaitVisible(sel("run-rerun-of")))
	require.Regexp(t, `^Rerun of \S+ from shout$`, strings.TrimSpace(eval[string](b, `document.querySelector('[data-testid="run-rerun-of"]').textContent`)))
	require.Equal(t, "/runs/"+src.RunID, eval[string](b, `document.querySelector('[data-testid="run-rerun-of-link"]').getAttribute('href')`))
	require.Equal(t, "/runs/"+src.RunID+"?step=shout", eval[string](b, `document.querySelector('[data-testid="run-rerun-of-step"]').getAttribute('href')`))
	type mark struct{ Step, Text, Href string }
	marks := eval[[]mark](b, `[...document.querySelectorAll('[data-testid="step-reused"]')].map(c => ({
		Step: c.closest('[data-testid="step"]').dataset.stepId, Text: c.textContent,
		Href: c.querySelector('[data-testid="step-reused-link"]').getAttribute('href')}))`)
	require.Len(t, marks, 1, "only greet was reused")
	require.Equal(t, "greet", marks[0].Step)
	require.Contains(t, marks[0].Text, "reused, not run")
	require.Equal(t, "/runs/"+src.RunID, marks[0].Href)
	require.Equal(t, []string{"greet", "shout"}, rerunOffered(b), "a rerun that ended may be rerun too")

	// The link leads to the source, which is no rerun and reused nothing.
	b.do(chromedp.Click(sel("run-rerun-of-link")))
	b.waitFor(`document.querySelector('[data-testid="run-id"]')?.textContent === ` + js(src.RunID))
	require.Equal(t, []string{"greet", "shout"}, rerunOffered(b))
	require.Zero(t, eval[int](b, `document.querySelectorAll('[data-testid="run-rerun-of"], [data-testid="step-reused"]').length`))

	b.open("/runs/" + running.RunID)
	b.waitFor(`document.querySelector('[data-testid="run-id"]')?.textContent === ` + js(running.RunID))
	require.Empty(t, rerunOffered(b), "a run that has not ended is not rerun")

	b.do(chromedp.Navigate(b.url + "/runs/" + src.RunID + "#token=" + viewerToken))
	b.waitFor(`document.querySelector('[data-testid="run-id"]')?.textContent === ` + js(src.RunID))
	require.Empty(t, rerunOffered(b), "a viewer may not start runs")
	b.console.RequireNoErrors(t)
}

// rerunPlan: a, then b.
const rerunPlan = `{"planId":"rr","planVersion":"1","steps":[{"id":"a","activity":"echo"},{"id":"b","activity":"echo","dependsOn":["a"]}]}`

// endRun appends runID's RunCompleted through the journal, as the engine
// ends a run, so that the projector sees it end.
func (s *stack) endRun(t *testing.T, runID string) {
	t.Helper()
	ev, err := events.New(events.Spec{RunID: runID, Type: events.RunCompleted, PlanVersion: "1", EmittedAt: time.Now().UTC(), Data: events.RunCompletedData{}})
	require.NoError(t, err)
	_, err = eventlogtest.Append(t.Context(), journal.New(eventlog.New(s.db.Pool)), s.db.Pool, nil, ev)
	require.NoError(t, err)
}

// "Rerun from here" against the real gateway, through the projector's
// gateway route: the editor starts from the run's input; input that is
// not JSON is said and not sent; a refusal shows the gateway's message
// beside the editor and starts nothing; a rerun the gateway accepts opens
// the new run, whose page names its source.
func TestRerunFromHere(t *testing.T) {
	t.Parallel()
	s := setupStack(t)
	started, err := s.client.StartRun(t.Context(), api.StartRunRequest{TenantID: stackTenant, ProjectID: "shop", EnvironmentID: "prod",
		PlanID: "rr", PlanVersion: "1", Plan: json.RawMessage(rerunPlan), Input: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	src := started.RunID
	s.endRun(t, src) // no engine: a and b never ran
	const rerunCall = "POST /gateway/v1/runs/"

	s.open("/runs/" + src)
	s.waitFor(`document.querySelector('[data-testid="run-status"]')?.textContent === 'COMPLETED'`)
	require.Equal(t, []string{"a", "b"}, rerunOffered(s.bundle))
	require.False(t, eval[bool](s.bundle, visible(`[data-testid="rerun-form"]`)))
	rerunFrom := func(step, input string) {
		t.Helper()
		s.do(chromedp.Click(`[data-testid="btn-rerun-step"][data-step-id="`+step+`"]`), chromedp.WaitVisible(sel("rerun-form")))
		require.Equal(t, step, eval[string](s.bundle, `document.querySelector('[data-testid="rerun-from"]').textContent`))
		require.JSONEq(t, `{"n":1}`, eval[string](s.bundle, `document.querySelector('[data-testid="rerun-input"]').value`),
			"the editor starts from the run's input")
		s.do(chromedp.SetValue(sel("rerun-input"), input), chromedp.Click(sel("rerun-submit")))
	}
	calls := func() int { return s.rec.count(rerunCall + src + "/rerun") }

	// Not JSON: said at once, nothing sent.
	rerunFrom("a", `{"n": 2,`)
	s.waitFor(visible(`[data-testid="rerun-json-error"]`))
	require.Contains(t, eval[string](s.bundle, `document.querySelector('[data-testid="rerun-json-error"]').textContent`), "not valid JSON")
	require.Zero(t, calls(), "input that is not JSON is never sent")

	// From b, whose ancestor a did not succeed: the gateway's refusal, beside the editor.
	rerunFrom("b", `{"n": 2}`)
	s.waitFor(visible(`[data-testid="rerun-error"]`))
	msg := eval[string](s.bundle, `document.querySelector('[data-testid="rerun-error"]').textContent`)
	require.Contains(t, msg, api.CodeRerunRefused)
	require.Contains(t, msg, `step "a" did not succeed in run `+src)
	require.Equal(t, 1, calls())
	require.Equal(t, "/runs/"+src, eval[string](s.bundle, `decodeURIComponent(location.pathname)`), "a refused rerun stays on the page")
	runs, err := s.client.ListRuns(t.Context(), client.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs.Runs, 1, "a refused rerun starts no run")

	// From a: the new run's page, naming its source.
	rerunFrom("a", `{"n": 2}`)
	s.waitFor(`location.pathname.startsWith('/runs/') && decodeURIComponent(location.pathname) !== ` + js("/runs/"+src))
	newRun := strings.TrimPrefix(eval[string](s.bundle, `decodeURIComponent(location.pathname)`), "/runs/")
	s.waitFor(`document.querySelector('[data-testid="run-rerun-of"]')?.dataset.runId === ` + js(src))
	require.Equal(t, "/runs/"+src, eval[string](s.bundle, `document.querySelector('[data-testid="run-rerun-of-link"]').getAttribute('href')`))
	require.Equal(t, 2, calls())
	v, err := s.client.GetRun(t.Context(), newRun)
	require.NoError(t, err)
	require.Equal(t, &events.RunRerun{RunID: src, FromStepID: "a"}, v.RerunOf)
	require.JSONEq(t, `{"n": 2}`, string(v.Input), "the edited input")
	require.Empty(t, rerunOffered(s.bundle), "the new run has not ended")
	requireOnlyErrors(t, s, `status of 409 .*/gateway/v1/runs/`+regexp.QuoteMeta(src)+`/rerun`, `status of 404 .*/v1/runs/`+regexp.QuoteMeta(newRun))
}
