package ui_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/testkit/browsertest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// Environment variables that ask the tests below for PNGs.
const (
	envScreenshotData = "WEFT_UI_SCREENSHOT_FOREACH" // the orders run, its forEach step open
	envScreenshotStep = "WEFT_UI_SCREENSHOT_STEP"    // the orders run, a retried step open
)

// openRun serves v with its events and opens its page.
func openRun(t *testing.T, v api.RunView, evs []events.Event) *bundle {
	t.Helper()
	b := setup(t, v)
	b.api.setEvents(v.RunID, evs)
	b.open("/runs/" + v.RunID)
	b.waitFor(`document.querySelectorAll('[data-testid="step"]').length > 0`)
	return b
}

// openStep clicks the Details button of step id and waits for its detail.
func (b *bundle) openStep(id string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS(`[data-testid="btn-step-details"][data-step-id=` + js(id) + `]`)))
	b.waitForPanel(id)
}

// waitForPanel waits until the step panel shows step id's loaded detail.
func (b *bundle) waitForPanel(id string) {
	b.t.Helper()
	b.waitFor(`document.querySelector('[data-testid="step-panel-id"]')?.textContent === ` + js(id) +
		` && !!document.querySelector('[data-testid="step-panel"] [data-testid^="detail-attempts"]')`)
}

// panelText returns the text of the element with testid inside the step panel.
func panelText(b *bundle, testid string) string {
	b.t.Helper()
	return eval[string](b, `document.querySelector('[data-testid="step-panel"] [data-testid="`+testid+`"]')?.textContent ?? ''`)
}

// prettyJSON is the value as the UI prints it: JSON.stringify(v, null, 2).
func prettyJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v))
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	return string(b)
}

// TestStepInputOutput: a step's details show its resolved input, cut at
// 2,000 characters until "Show full value", and its output; a step that
// ran the plan's static input says so; the blocks close and open.
func TestStepInputOutput(t *testing.T) {
	t.Parallel()
	v, evs := ordersRun(t, time.Now())
	b := openRun(t, v, evs)
	b.openStep("load")

	full := prettyJSON(t, mustJSON(t, bigRows()))
	require.Greater(t, len(full), 2000)
	shown := panelText(b, "detail-input-json")
	assert.Equal(t, full[:2000]+"…", shown, "the input is cut at 2,000 characters")
	assert.Equal(t, "true", eval[string](b, `document.querySelector('[data-testid="detail-input"]').dataset.truncated`))
	assert.Contains(t, panelText(b, "detail-input"), "Resolved when the attempt was scheduled")
	b.do(chromedp.Click(chromedp.CSS(`[data-testid="detail-input-full"]`)))
	b.waitFor(`document.querySelector('[data-testid="detail-input"]').dataset.truncated === 'false'`)
	assert.Equal(t, full, panelText(b, "detail-input-json"), "the full value, pretty-printed")
	assert.Equal(t, prettyJSON(t, json.RawMessage(`{"currency":"EUR","total":60}`)), panelText(b, "detail-output-json"))

	// Expandable: a block closes and opens.
	assert.True(t, eval[bool](b, `document.querySelector('[data-testid="detail-output"]').open`))
	b.do(chromedp.Click(chromedp.CSS(`[data-testid="detail-output"] summary`)))
	b.waitFor(`!document.querySelector('[data-testid="detail-output"]').open`)

	b.openStep("notify")
	assert.Equal(t, prettyJSON(t, json.RawMessage(`{"to":"ops@example.com"}`)), panelText(b, "detail-input-json"))
	assert.Contains(t, panelText(b, "detail-input"), "The plan's static input")
	assert.Equal(t, "false", eval[string](b, `document.querySelector('[data-testid="detail-input"]').dataset.truncated`))
	b.console.RequireNoErrors(t)
}

// TestStepSkipReason: a skipped step shows its reason on its node, and its
// details name the step whose condition was false, with no input.
func TestStepSkipReason(t *testing.T) {
	t.Parallel()
	v, evs := ordersRun(t, time.Now())
	b := openRun(t, v, evs)
	assert.Equal(t, "CONDITION_FALSE", eval[string](b,
		`document.querySelector('[data-step-id="check"] [data-testid="step-skip-reason"]').textContent`))
	b.openStep("check")
	assert.Equal(t, "CONDITION_FALSE", panelText(b, "detail-skip-reason"))
	assert.Contains(t, panelText(b, "detail-skip"), "the condition (if) of step check was false")
	assert.Equal(t, "No input: the step did not run.", panelText(b, "detail-input-none"))
	b.console.RequireNoErrors(t)
}

// TestStepAttemptHistory: a retried step lists each attempt with its
// times, worker and error.
func TestStepAttemptHistory(t *testing.T) {
	t.Parallel()
	v, evs := ordersRun(t, time.Now())
	b := openRun(t, v, evs)
	b.openStep("load")
	type row struct{ Attempt, Status, Scheduled, Started, Completed, Worker, Error string }
	rows := eval[[]row](b, `[...document.querySelectorAll('[data-testid="attempt-row"]')].map(r => ({
		Attempt: r.dataset.attempt,
		Status: r.querySelector('[data-testid="attempt-status"]').textContent,
		Scheduled: r.querySelector('[data-testid="attempt-scheduled"]').textContent,
		Started: r.querySelector('[data-testid="attempt-started"]').textContent,
		Completed: r.querySelector('[data-testid="attempt-completed"]').textContent,
		Worker: r.querySelector('[data-testid="attempt-worker"]').textContent,
		Error: r.querySelector('[data-testid="attempt-error"]').textContent,
	}))`)
	require.Len(t, rows, 2)
	if path := os.Getenv(envScreenshotStep); path != "" {
		require.NoError(t, browsertest.Screenshot(b.step(), path))
		t.Logf("wrote %s", path)
	}
	assert.Equal(t, []string{"1", "FAILED", "worker-a"}, []string{rows[0].Attempt, rows[0].Status, rows[0].Worker})
	assert.Contains(t, rows[0].Error, "TIMEOUT")
	assert.Contains(t, rows[0].Error, "the database did not answer in 30s")
	assert.Contains(t, rows[0].Error, "retried at")
	assert.Equal(t, []string{"2", "SUCCESS", "worker-b", "—"}, []string{rows[1].Attempt, rows[1].Status, rows[1].Worker, rows[1].Error})
	for _, r := range rows {
		for _, at := range []string{r.Scheduled, r.Started, r.Completed} {
			assert.NotEqual(t, "—", at, "attempt %s has each of its times", r.Attempt)
		}
	}
	b.console.RequireNoErrors(t)
}

// TestForEachNode: a forEach step is one node with its children's count;
// it opens into its children, 50 at a time, and a child opens with its own
// input, output and attempts, and leads back to its parent.
func TestForEachNode(t *testing.T) {
	t.Parallel()
	v, evs := ordersRun(t, time.Now())
	b := openRun(t, v, evs)
	require.NoError(t, waitUntil(b.step(), func() bool { return hasQuery(b.api.runCalls(), "steps", "top") }),
		"the page asks for the run without its children")
	nodes := eval[[]string](b, `[...document.querySelectorAll('[data-testid="step"]')].map(n => n.dataset.stepId)`)
	assert.ElementsMatch(t, []string{"load", "check", "notify", "ship", "report"}, nodes, "the children are not nodes")
	assert.Equal(t, "55 done · 2 running · 1 failed of 60", eval[string](b,
		`document.querySelector('[data-step-id="ship"] [data-testid="step-foreach"]').textContent`))
	assert.Equal(t, "RUNNING", eval[string](b,
		`document.querySelector('[data-step-id="ship"] [data-testid="step-status"]').textContent`),
		"the forEach step is in flight while its children run")

	b.openStep("ship")
	if path := os.Getenv(envScreenshotData); path != "" {
		require.NoError(t, browsertest.Screenshot(b.step(), path))
		t.Logf("wrote %s", path)
	}
	assert.Equal(t, "55 done · 2 running · 1 failed of 60", panelText(b, "detail-foreach-progress"))
	assert.Equal(t, prettyJSON(t, json.RawMessage(`[`+seq(60)+`]`)), panelText(b, "detail-input-json"), "the evaluated list")
	assert.Equal(t, 50, eval[int](b, `document.querySelectorAll('[data-testid="foreach-child"]').length`))
	assert.Empty(t, panelText(b, "foreach-waiting"), "more children are listed")
	b.do(chromedp.Click(chromedp.CSS(`[data-testid="foreach-more"]`)))
	b.waitFor(`document.querySelectorAll('[data-testid="foreach-child"]').length === 58`)
	assert.Equal(t, "2 not scheduled yet", panelText(b, "foreach-waiting"))
	assert.Empty(t, panelText(b, "foreach-more"), "every child is listed")
	assert.Equal(t, "FAILED", eval[string](b,
		`document.querySelector('[data-testid="foreach-child"][data-step-id="ship[55]"] [data-testid="foreach-child-status"]').textContent`))

	b.do(chromedp.Click(chromedp.CSS(`[data-testid="foreach-child-open"][data-step-id="ship[55]"]`)))
	b.waitForPanel("ship[55]")
	assert.Equal(t, prettyJSON(t, json.RawMessage(`{"order":55}`)), panelText(b, "detail-input-json"))
	assert.Contains(t, panelText(b, "attempt-error"), "ADDRESS_INVALID")
	b.do(chromedp.Click(chromedp.CSS(`[data-testid="step-panel-parent"]`)))
	b.waitForPanel("ship")

	b.do(chromedp.Click(chromedp.CSS(`[data-testid="foreach-child-open"][data-step-id="ship[3]"]`)))
	b.waitForPanel("ship[3]")
	assert.Equal(t, prettyJSON(t, json.RawMessage(`{"tracking":"TRK-3"}`)), panelText(b, "detail-output-json"))
	b.console.RequireNoErrors(t)
}

// TestStepPanelFollowsTheRun: the open step's detail is read again when
// its snapshot changes.
func TestStepPanelFollowsTheRun(t *testing.T) {
	t.Parallel()
	now := time.Now()
	v, evs := ordersRun(t, now)
	b := openRun(t, v, evs)
	b.openStep("ship")
	b.do(chromedp.Click(chromedp.CSS(`[data-testid="foreach-more"]`)))
	b.do(chromedp.Click(chromedp.CSS(`[data-testid="foreach-child-open"][data-step-id="ship[56]"]`)))
	b.waitForPanel("ship[56]")
	assert.Equal(t, "No output yet.", panelText(b, "detail-output-none"))

	done := evs[len(evs)-1]
	done.RunSeq, done.EventType, done.StepID = done.RunSeq+1, events.StepCompleted, "ship[56]"
	done.EventData = json.RawMessage(`{"output":{"tracking":"TRK-56"}}`)
	evs = append(evs, done)
	next, err := events.ProjectIncremental(v.RunSnapshot, evs[len(evs)-1:])
	require.NoError(t, err)
	v.RunSnapshot = next
	b.api.setEvents(v.RunID, evs)
	b.api.update(v)
	b.waitFor(`document.querySelector('[data-testid="detail-output-json"]')?.textContent === ` +
		js(prettyJSON(t, json.RawMessage(`{"tracking":"TRK-56"}`))))
	assert.Equal(t, "56 done · 1 running · 1 failed of 60", eval[string](b,
		`document.querySelector('[data-step-id="ship"] [data-testid="step-foreach"]').textContent`))
	b.console.RequireNoErrors(t)
}

// TestRunInputOutput: the run page shows the run's input and, once it
// completed, its output, cut until "Show full value".
func TestRunInputOutput(t *testing.T) {
	t.Parallel()
	v, evs := completedRun(t, time.Now())
	require.Equal(t, events.RunStatusCompleted, v.Status)
	b := openRun(t, v, evs)
	b.waitFor(visible(`[data-testid="run-data"]`))
	assert.Equal(t, prettyJSON(t, v.Input), eval[string](b, `document.querySelector('[data-testid="run-input-json"]').textContent`))
	out := prettyJSON(t, v.Output)
	require.Greater(t, len(out), 2000)
	assert.Equal(t, out[:2000]+"…", eval[string](b, `document.querySelector('[data-testid="run-output-json"]').textContent`))
	b.do(chromedp.Click(chromedp.CSS(`[data-testid="run-output-full"]`)))
	b.waitFor(`document.querySelector('[data-testid="run-output-json"]').textContent.length === ` + js(len([]rune(out))))
	assert.Equal(t, out, eval[string](b, `document.querySelector('[data-testid="run-output-json"]').textContent`))

	// A run still running has no output yet.
	running, revs := ordersRun(t, time.Now())
	b2 := openRun(t, running, revs)
	b2.waitFor(visible(`[data-testid="run-input"]`))
	assert.Equal(t, "No output yet.", eval[string](b2, `document.querySelector('[data-testid="run-output-none"]').textContent`))
	b.console.RequireNoErrors(t)
	b2.console.RequireNoErrors(t)
}
