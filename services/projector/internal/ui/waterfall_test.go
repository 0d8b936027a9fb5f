package ui_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
)

// wfBar is one bar of the waterfall as the page draws it: its kind, its
// attempt and outcome, and its box in pixels.
type wfBar struct {
	Kind, Attempt, Status string
	Left, Right           float64
}

// bars returns the bars of the waterfall's row of step id ("" the run's).
func bars(b *bundle, id string) []wfBar {
	b.t.Helper()
	return eval[[]wfBar](b, `[...document.querySelectorAll('[data-testid="wf-row"][data-step-id=`+js(id)+`] [data-testid="wf-bar"]')].map(e => {
		const r = e.getBoundingClientRect();
		return { Kind: e.dataset.kind, Attempt: e.dataset.attempt ?? '', Status: e.dataset.status ?? '', Left: r.left, Right: r.right };
	})`)
}

// kinds returns each bar's "kind attempt status", without the geometry.
func kinds(list []wfBar) []string {
	out := make([]string, len(list))
	for i, x := range list {
		out[i] = x.Kind + " " + x.Attempt + " " + x.Status
	}
	return out
}

// TestWaterfall: the run page draws every attempt of every step on one
// time axis, from the run's events: queued, running, the retry backoff
// between attempts, waiting for a signal, and the run's own span. Bars are
// placed through the CSSOM, which the page's CSP allows (style attributes
// in markup it refuses): their widths keep the attempts' proportions, and
// no redraw trips the policy.
func TestWaterfall(t *testing.T) {
	t.Parallel()
	rich, evs := richRun(time.Now())
	b := setup(t, rich)
	b.api.setEvents(rich.RunID, evs)
	b.open("/runs/" + rich.RunID)
	b.waitFor(`document.querySelectorAll('[data-testid="wf-row"] [data-testid="wf-bar"][data-kind="waiting"]').length === 1`)

	require.Equal(t, []string{"", "extract", "validate", "transform", "enrich", "approve", "publish", "notify"},
		eval[[]string](b, `[...document.querySelectorAll('[data-testid="wf-row"]')].map(r => r.dataset.stepId)`),
		"the run, then one row per plan step in plan order")
	assert.Equal(t, []string{"pending  ", "run  "}, kinds(bars(b, "")), "approved, then running")
	assert.Equal(t, []string{"queued 1 ", "running 1 SUCCESS"}, kinds(bars(b, "extract")))
	validate := bars(b, "validate")
	require.Equal(t, []string{"running 1 FAILED", "retry 1 ", "running 2 SUCCESS"}, kinds(validate))
	assert.LessOrEqual(t, validate[0].Right, validate[1].Left+1, "the retry backoff follows the failed attempt")
	assert.LessOrEqual(t, validate[1].Right, validate[2].Left+1, "and the next attempt follows the backoff")
	assert.Equal(t, []string{"waiting 1 RUNNING"}, kinds(bars(b, "approve")), "a waitSignal step waits for its signal")
	assert.Equal(t, []string{"running 1 RUNNING"}, kinds(bars(b, "enrich")))
	assert.Empty(t, bars(b, "publish"), "a step that has not started has no bar")

	// extract ran 42 s and validate's second attempt 13 s: the bars keep
	// the proportion, so their CSSOM widths were applied.
	extract := bars(b, "extract")[1]
	ratio := (extract.Right - extract.Left) / (validate[2].Right - validate[2].Left)
	assert.InDelta(t, 42.0/13.0, ratio, 0.25, "bar widths are proportional to the attempts' durations")

	// Count CSP violations; a style attribute set as markup is one (the
	// policy is on), a redraw of the waterfall none.
	b.do(chromedp.Evaluate[chromedp.Void](`window.__csp = 0; document.addEventListener('securitypolicyviolation', () => window.__csp++)`))
	later := rich
	later.LastEventSeq++
	b.api.setEvents(rich.RunID, append(evs, events.Event{SchemaVersion: events.SchemaVersion, RunID: rich.RunID, RunSeq: later.LastEventSeq,
		EventID: "0193a1f4-7c41-7a8e-9d1f-0000000000ff", StepID: "enrich", LogicalAttemptID: "1", EngineAttemptID: "3",
		EventType: events.StepCompleted, EventData: json.RawMessage(`{}`), EmittedAt: time.Now(), PersistedAt: time.Now()}))
	b.api.update(later)
	b.waitFor(`document.querySelector('[data-testid="wf-row"][data-step-id="enrich"] [data-testid="wf-bar"]')?.dataset.status === 'SUCCESS'`)
	require.Equal(t, 0, eval[int](b, `window.__csp`), "the redraw set no inline style the CSP refuses")
	b.do(chromedp.Evaluate[chromedp.Void](`document.body.insertAdjacentHTML('beforeend', '<span id="csp-probe" style="left: 5px"></span>')`))
	b.waitFor(`window.__csp === 1`)
}

// TestWaterfallForEachAndQueue: a forEach step is one row spanning its
// children, which the row summarizes; its first CHILD_ROWS children are
// drawn on demand. A queued run's row shows the wait before its start,
// with the queue's reason. A step's name opens its panel.
func TestWaterfallForEachAndQueue(t *testing.T) {
	t.Parallel()
	now := time.Now()
	v, evs := ordersRun(t, now)
	// Park the run in the queue between its approval and its start.
	evs = append(evs[:1:1], append([]events.Event{{SchemaVersion: events.SchemaVersion, RunID: v.RunID, RunSeq: 1,
		EventID: v.RunID + "-q", EventType: events.RunQueued, EmittedAt: evs[0].EmittedAt.Add(100 * time.Millisecond),
		EventData: json.RawMessage(`{"reason":"2 of 2 running in environment prod"}`)}}, evs[1:]...)...)
	for i := range evs {
		evs[i].RunSeq = int64(i + 1)
	}
	v.LastEventSeq = int64(len(evs))
	b := setup(t, v)
	b.api.setEvents(v.RunID, evs)
	b.open("/runs/" + v.RunID)
	b.waitFor(`document.querySelector('[data-testid="wf-children"]')?.textContent === '58 of 60 elements'`)

	require.Equal(t, []string{"", "load", "check", "notify", "ship", "report"},
		eval[[]string](b, `[...document.querySelectorAll('[data-testid="wf-row"]')].map(r => r.dataset.stepId)`),
		"a forEach step is one row: its children are not drawn")
	assert.Equal(t, []string{"queued  ", "run  "}, kinds(bars(b, "")))
	assert.Contains(t, eval[string](b, `document.querySelector('[data-testid="wf-row"][data-step-id=""] [data-kind="queued"]').title`),
		"queued: 2 of 2 running in environment prod")
	assert.Equal(t, []string{"queued 1 ", "running 1 FAILED", "retry 1 ", "queued 2 ", "running 2 SUCCESS"}, kinds(bars(b, "load")))
	assert.Equal(t, []string{"mark 1 SKIPPED"}, kinds(bars(b, "check")), "a skipped step is a mark, not a span")
	ship := kinds(bars(b, "ship"))
	require.NotEmpty(t, ship)
	assert.Equal(t, "children  ", ship[0], "the row spans its children")

	b.do(chromedp.Click(sel("wf-children-toggle")))
	b.waitFor(`document.querySelectorAll('.wf-child[data-testid="wf-row"]').length === 20`)
	children := eval[[]string](b, `[...document.querySelectorAll('.wf-child[data-testid="wf-row"]')].map(r => r.dataset.stepId)`)
	assert.Equal(t, events.ChildStepID("ship", 0), children[0])
	assert.Equal(t, events.ChildStepID("ship", 19), children[19])
	assert.Equal(t, []string{"queued 1 ", "running 1 SUCCESS"}, kinds(bars(b, events.ChildStepID("ship", 0))))

	b.do(chromedp.Click(chromedp.CSS(`[data-testid="wf-row"][data-step-id="load"] .wf-name`)))
	b.waitForPanel("load")
	b.console.RequireNoErrors(t)
}
