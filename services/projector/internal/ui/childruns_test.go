package ui_test

import (
	"encoding/json"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/testkit/browsertest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// envScreenshotFamily asks TestSubPlanStepOpensItsChild for a PNG of the
// parent run's page, its subPlan step open.
const envScreenshotFamily = "WEFT_UI_SCREENSHOT_CHILDREN"

// releasePlan starts child runs: build by planRef once prepare is done,
// shards one per element of prepare's list, and deploy from an inline plan
// after build.
const releasePlan = `{"schemaVersion":4,"planId":"release","planVersion":"v5","steps":[
 {"id":"prepare","activity":"git.tag"},
 {"id":"build","kind":"subPlan","planRef":{"planId":"builder","planVersion":"v2"},"dependsOn":["prepare"],
  "input":{"tag":"${{ steps.prepare.output.tag }}"}},
 {"id":"shards","kind":"subPlan","planRef":{"planId":"builder","planVersion":"v2"},"dependsOn":["prepare"],
  "forEach":"steps.prepare.output.shards","input":{"shard":"${{ item }}"}},
 {"id":"deploy","kind":"subPlan","dependsOn":["build"],
  "plan":{"schemaVersion":4,"planId":"deployer","planVersion":"v1","steps":[{"id":"push","activity":"k8s.apply"}]}}]}`

// family is a RUNNING parent run of releasePlan and the child its build
// step started: the parent's build has started its child, shards[0] has
// started its own and shards[1] not yet, deploy has not started.
type family struct {
	parent, child        api.RunView
	parentEvs, childEvs  []events.Event
	shardChild           string // the child run of shards[0]
	parentID, buildChild string
}

func newFamily(t *testing.T, now time.Time) family {
	t.Helper()
	parentID := "0193c000-7c41-7a8e-9d1f-3b2c5e8f0001"
	f := family{parentID: parentID}
	f.buildChild = events.ChildRunID(parentID, "build", 1, now)
	f.shardChild = events.ChildRunID(parentID, events.ChildStepID("shards", 0), 1, now)
	f.parent, f.parentEvs = projectedRun(t, parentID, now, releasePlan, map[string]any{"repo": "shop"}, []scripted{
		{typ: events.RunStarted},
		{events.StepScheduled, "prepare", "1", "", events.StepScheduledData{Activity: "git.tag", Queue: "default"}},
		{events.StepStarted, "prepare", "1", "1", events.StepStartedData{WorkerID: "worker-a"}},
		{events.StepCompleted, "prepare", "1", "1", events.StepCompletedData{Output: json.RawMessage(`{"tag":"v1.2.3","shards":["eu","us"]}`)}},
		{events.StepScheduled, "build", "1", "", events.StepScheduledData{ChildRunID: f.buildChild, Input: json.RawMessage(`{"tag":"v1.2.3"}`)}},
		{events.StepStarted, "build", "1", "", events.StepStartedData{}},
		{events.StepScheduled, "shards", "1", "", events.StepScheduledData{Input: json.RawMessage(`["eu","us"]`),
			ForEach: &events.ForEachData{Count: 2, MaxParallel: 1}}},
		{events.StepStarted, "shards", "1", "", events.StepStartedData{}},
		{events.StepScheduled, events.ChildStepID("shards", 0), "1", "", events.StepScheduledData{ChildRunID: f.shardChild,
			Input: json.RawMessage(`{"shard":"eu"}`)}},
		{events.StepStarted, events.ChildStepID("shards", 0), "1", "", events.StepStartedData{}},
	})
	f.child, f.childEvs = projectedRun(t, f.buildChild, now, `{"planId":"builder","planVersion":"v2","steps":[{"id":"compile","activity":"go.build"}]}`,
		map[string]any{"tag": "v1.2.3"}, []scripted{
			{typ: events.RunStarted},
			{events.StepScheduled, "compile", "1", "", events.StepScheduledData{Activity: "go.build", Queue: "default"}},
		})
	f.child.Parent = &events.RunParent{RunID: parentID, StepID: "build", LogicalAttemptID: "1", PlanVersion: "v5", Depth: 1}
	return f
}

// serve serves the family's runs, with their events, from a fake API.
func (f family) serve(t *testing.T, more ...api.RunView) *bundle {
	t.Helper()
	b := setup(t, append([]api.RunView{f.child, f.parent}, more...)...)
	b.api.setEvents(f.parentID, f.parentEvs)
	b.api.setEvents(f.buildChild, f.childEvs)
	return b
}

// attr returns the attribute name of the element the selector finds, or
// "" when there is none.
func attr(b *bundle, selector, name string) string {
	b.t.Helper()
	return eval[string](b, `document.querySelector(`+js(selector)+`)?.getAttribute(`+js(name)+`) ?? ''`)
}

// address is the page's path and query.
func address(b *bundle) string {
	b.t.Helper()
	return eval[string](b, `location.pathname + location.search`)
}

// TestChildRunBreadcrumb: a child run's page leads to its parent run and
// to the step that started it, opened on the parent's page, and says how
// deep it is; a run without a parent has no such breadcrumb.
func TestChildRunBreadcrumb(t *testing.T) {
	t.Parallel()
	f := newFamily(t, time.Now())
	b := f.serve(t)
	b.open("/runs/" + f.buildChild)
	b.waitFor(visible(`[data-testid="run-parent"]`))
	assert.Equal(t, "/runs/"+f.parentID, attr(b, `[data-testid="run-parent-link"]`, "href"))
	assert.Equal(t, "/runs/"+f.parentID+"?step=build", attr(b, `[data-testid="run-parent-step"]`, "href"))
	assert.Equal(t, "step build", eval[string](b, `document.querySelector('[data-testid="run-parent-step"]').textContent`))
	assert.Equal(t, "1", attr(b, `[data-testid="run-parent"]`, "data-depth"))
	assert.Equal(t, "child run · depth 1", eval[string](b, `document.querySelector('[data-testid="run-depth"]').textContent`))
	assert.False(t, eval[bool](b, visible(`[data-testid="run-children-link"]`)), "the child's plan starts no child runs")

	// The step link opens the parent's page with the step's panel open.
	b.do(chromedp.Click(sel("run-parent-step")))
	b.waitForPanel("build")
	assert.Equal(t, "/runs/"+f.parentID+"?step=build", address(b))
	assert.Equal(t, f.parentID, eval[string](b, `document.querySelector('[data-testid="run-id"]').textContent`))
	assert.False(t, eval[bool](b, `!!document.querySelector('[data-testid="run-parent"]')`), "the parent has no parent")
	assert.Empty(t, texts(b, "run-depth"))

	// Back on the child's page, the parent link opens the parent's page.
	b.do(chromedp.Click(sel("detail-child-run-link")))
	b.waitFor(visible(`[data-testid="run-parent"]`))
	assert.Equal(t, "/runs/"+f.buildChild, address(b))
	b.do(chromedp.Click(sel("run-parent-link")))
	b.waitFor(`document.querySelector('[data-testid="run-id"]')?.textContent === ` + js(f.parentID))
	assert.Equal(t, "/runs/"+f.parentID, address(b))
	assert.False(t, eval[bool](b, visible(`[data-testid="step-panel"]`)), "no step is opened")
	b.console.RequireNoErrors(t)
}

// TestSubPlanStepOpensItsChild: on a parent's page, a subPlan step's node
// is marked as one and links to the child run its attempt started, as its
// panel does; a step whose child has not started has nothing to click; a
// forEach over a subPlan step lists each element's child run. The step
// opened is in the address.
func TestSubPlanStepOpensItsChild(t *testing.T) {
	t.Parallel()
	f := newFamily(t, time.Now())
	b := f.serve(t)
	b.open("/runs/" + f.parentID)
	b.waitFor(`document.querySelectorAll('[data-testid="step"]').length === 4`)

	type node struct {
		ID, Kind, Child string
		Marked          bool
		Links           int
	}
	nodes := eval[[]node](b, `[...document.querySelectorAll('[data-testid="step"]')].map(n => ({
		ID: n.dataset.stepId, Kind: n.dataset.kind ?? '', Marked: n.classList.contains('node-subplan'),
		Child: n.querySelector('[data-testid="step-child-run"]')?.getAttribute('href') ?? '',
		Links: n.querySelectorAll('a').length}))`)
	assert.ElementsMatch(t, []node{
		{ID: "prepare"},
		{ID: "build", Kind: "subPlan", Marked: true, Child: "/runs/" + f.buildChild, Links: 1},
		{ID: "shards", Kind: "subPlan", Marked: true},
		{ID: "deploy", Kind: "subPlan", Marked: true},
	}, nodes)
	assert.Contains(t, eval[string](b, `document.querySelector('[data-step-id="deploy"] [data-testid="step-subplan"]').textContent`), "starts a child run")

	// The step's panel names the child, or says it has not started.
	b.openStep("deploy")
	assert.Equal(t, "/runs/"+f.parentID+"?step=deploy", address(b))
	b.waitFor(`!!document.querySelector('[data-testid="detail-child-run-none"]')`)
	assert.Zero(t, eval[int](b, `document.querySelectorAll('[data-testid="detail-child-run"] a').length`), "nothing to open yet")
	b.openStep("build")
	assert.Equal(t, "/runs/"+f.parentID+"?step=build", address(b))
	b.waitFor(`!!document.querySelector('[data-testid="detail-child-run-link"]')`)
	assert.Equal(t, "/runs/"+f.buildChild, attr(b, `[data-testid="detail-child-run-link"]`, "href"))
	assert.Equal(t, f.buildChild, panelText(b, "detail-child-run-link"))
	if path := os.Getenv(envScreenshotFamily); path != "" {
		require.NoError(t, browsertest.Screenshot(b.step(), path))
		t.Logf("wrote %s", path)
	}

	// A forEach over a subPlan step: each element's child, once started.
	b.openStep("shards")
	b.waitFor(`document.querySelectorAll('[data-testid="foreach-child"]').length === 1`)
	assert.Equal(t, "/runs/"+f.shardChild, attr(b, `[data-testid="foreach-child"][data-step-id="shards[0]"] [data-testid="foreach-child-run"]`, "href"))
	b.do(chromedp.Click(chromedp.CSS(`[data-testid="foreach-child-open"][data-step-id="shards[0]"]`)))
	b.waitForPanel("shards[0]")
	assert.Equal(t, "/runs/"+f.shardChild, attr(b, `[data-testid="detail-child-run-link"]`, "href"))
	assert.Equal(t, "/runs/"+f.parentID+"?step="+url.QueryEscape("shards[0]"), address(b))
	b.do(chromedp.Click(sel("step-panel-close")))
	b.waitFor(`location.search === ''`)

	// The node's link opens the child's page.
	// Scrolled to the middle first: at the top, the sticky header covers it.
	link := `[data-step-id="build"] [data-testid="step-child-run"]`
	b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector(` + js(link) + `).scrollIntoView({block: 'center'})`))
	b.do(chromedp.Click(chromedp.CSS(link)))
	b.waitFor(`document.querySelector('[data-testid="run-id"]')?.textContent === ` + js(f.buildChild))
	assert.Equal(t, "/runs/"+f.buildChild, address(b))
	b.console.RequireNoErrors(t)
}

// TestRunsListParentFilter: the runs list takes parent= from its address,
// asks GET /v1/runs for it, keeps it beside the other filters and shows it
// as a chip that removes it; a parent's page links to the list of its
// children.
func TestRunsListParentFilter(t *testing.T) {
	t.Parallel()
	now := time.Now()
	f := newFamily(t, now)
	other := simpleRun(runID(31), events.RunStatusCompleted, now)
	other.Parent = &events.RunParent{RunID: runID(30), StepID: "fan", LogicalAttemptID: "1", PlanVersion: "v1", Depth: 2}
	plain := simpleRun(runID(32), events.RunStatusRunning, now)
	b := f.serve(t, other, plain)

	b.open("/runs/" + f.parentID)
	b.waitFor(visible(`[data-testid="run-children-link"]`))
	b.do(chromedp.Click(sel("run-children-link")))
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === 1`)
	assert.Equal(t, "/?parent="+f.parentID, address(b))
	assert.Equal(t, []string{f.buildChild}, eval[[]string](b, `[...document.querySelectorAll('[data-testid="run-row"]')].map(r => r.dataset.runId)`))
	assert.True(t, hasQuery(b.api.listCalls(), "parent", f.parentID), "the list asks for the parent's children")
	assert.Equal(t, "child runs of 0193c000…8f0001", eval[string](b, `document.querySelector('[data-testid="filter-parent"]').textContent`))
	assert.Equal(t, f.parentID, attr(b, `[data-testid="filter-parent"]`, "data-run-id"))
	assert.Equal(t, "1 run matching", eval[string](b, `document.querySelector('[data-testid="runs-summary"]').textContent`))
	assert.Equal(t, "/runs/"+f.parentID, attr(b, `[data-testid="run-row"] [data-testid="run-row-parent"]`, "href"), "a child's row links to its parent")

	// Another filter keeps parent= in the address and the request.
	b.do(chromedp.Evaluate[chromedp.Void](`(s => { s.value = 'COMPLETED'; s.dispatchEvent(new Event('change')); })(document.querySelector('[data-testid="filter-status"]'))`))
	b.waitFor(`document.querySelector('.empty-row') !== null`)
	assert.Equal(t, "/?status=COMPLETED&parent="+f.parentID, address(b))
	require.NoError(t, waitUntil(b.step(), func() bool {
		return slices.ContainsFunc(b.api.listCalls(), func(q url.Values) bool {
			return q.Get("status") == "COMPLETED" && q.Get("parent") == f.parentID
		})
	}), "the list asks for both filters")

	// A reload of the address keeps both; the chip's remove drops parent= only.
	b.open("/?status=COMPLETED&parent=" + runID(30))
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === 1`)
	assert.Equal(t, "COMPLETED", eval[string](b, `document.querySelector('[data-testid="filter-status"]').value`))
	assert.Equal(t, other.RunID, attr(b, `[data-testid="run-row"]`, "data-run-id"))
	b.do(chromedp.Click(sel("filter-parent-remove")))
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === 1 && location.search === '?status=COMPLETED'`)
	assert.True(t, eval[bool](b, `document.querySelector('[data-testid="filter-parent"]').hidden`))
	require.NoError(t, waitUntil(b.step(), func() bool {
		calls := b.api.listCalls()
		last := calls[len(calls)-1]
		return last.Get("status") == "COMPLETED" && !last.Has("parent")
	}), "the list no longer asks for parent=")
	b.do(chromedp.Click(sel("filter-clear")))
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === 4`)
	assert.Equal(t, "/", address(b))
	assert.Equal(t, []string{f.buildChild, other.RunID}, eval[[]string](b,
		`[...document.querySelectorAll('[data-testid="run-row-parent"]')].map(a => a.closest('tr').dataset.runId)`), "only child runs name a parent")
	b.console.RequireNoErrors(t)
}
