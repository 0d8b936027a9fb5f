package ui_test

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/testkit/browsertest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

// ordersSchema is the inputSchema of orders@2.
const ordersSchema = `{"type":"object","required":["total","customer"],"additionalProperties":false,
	"properties":{"total":{"type":"number","minimum":0},"customer":{"type":"string","minLength":1}}}`

// The plans a stack's tests push, oldest first: orders@1 (no schema,
// archived by setupPlans), billing@1, orders@2 (with ordersSchema and
// three steps: charge, then ship and notify).
var planDocs = []struct{ project, doc string }{
	{"shop", `{"planId":"orders","planVersion":"1","steps":[{"id":"charge","activity":"echo"}]}`},
	{"books", `{"planId":"billing","planVersion":"1","steps":[{"id":"bill","activity":"echo"}]}`},
	{"shop", `{"planId":"orders","planVersion":"2","inputSchema":` + ordersSchema + `,"steps":[
		{"id":"charge","activity":"echo","input":{"amount":"${{ input.total }}"}},
		{"id":"ship","activity":"echo","dependsOn":["charge"]},
		{"id":"notify","kind":"waitSignal","signal":"sent","dependsOn":["charge"]}]}`},
}

// setupPlans starts a stack, registers planDocs through the gateway and
// archives orders@1.
func setupPlans(t *testing.T) *stack {
	t.Helper()
	s := setupStack(t)
	for _, p := range planDocs {
		_, created, err := s.client.PushPlan(t.Context(), api.PlanPushRequest{ProjectID: p.project, Plan: json.RawMessage(p.doc)})
		require.NoError(t, err)
		require.True(t, created)
	}
	_, err := s.client.ArchivePlanVersion(t.Context(), "shop", "orders", "1")
	require.NoError(t, err)
	return s
}

// ordersPage is the address of orders' page in project shop.
const ordersPage = "/plans/orders?projectId=shop"

// The Plans page lists the pushed versions, newest first, each with its
// project and state; a plan's page lists its versions (newest first, the
// latest marked, the archived one ARCHIVED) and shows the version shown's
// steps graph and inputSchema (issue #39, part 1).
func TestPlansListAndPlanPage(t *testing.T) {
	t.Parallel()
	s := setupPlans(t)

	s.open("/")
	s.do(chromedp.Click(sel("nav-plans")), chromedp.WaitVisible(sel("plans-table")))
	s.waitFor(`document.querySelectorAll('[data-testid="plan-row"]').length === 3`)
	require.Equal(t, "Plans · Weft", eval[string](s.bundle, `document.title`))
	require.Equal(t, "page", eval[string](s.bundle, `document.querySelector('[data-testid="nav-plans"]').getAttribute('aria-current')`))
	type row struct{ Plan, Version, Project, State string }
	rows := eval[[]row](s.bundle, `[...document.querySelectorAll('[data-testid="plan-row"]')].map(r => {
		const q = (id) => r.querySelector('[data-testid="' + id + '"]').textContent;
		return {Plan: q('plan-link'), Version: q('plan-version'), Project: q('plan-project'), State: q('plan-state')};
	})`)
	require.Equal(t, []row{
		{"orders", "2", "shop", "ACTIVE"}, {"billing", "1", "books", "ACTIVE"}, {"orders", "1", "shop", "ARCHIVED"},
	}, rows)
	require.Equal(t, "3 plan versions", eval[string](s.bundle, `document.querySelector('[data-testid="plans-summary"]').textContent`))

	// The plan's page, from its link: the latest version is shown.
	s.do(chromedp.Click(`[data-testid="plan-row"][data-plan-version="2"] [data-testid="plan-link"]`))
	s.waitFor(`!!document.querySelector('[data-testid="plan-version"][data-plan-version="2"]')`)
	require.Equal(t, ordersPage, eval[string](s.bundle, `location.pathname + location.search`))
	require.Equal(t, "page", eval[string](s.bundle, `document.querySelector('[data-testid="nav-plans"]').getAttribute('aria-current')`))
	type version struct{ Version, State string }
	versions := eval[[]version](s.bundle, `[...document.querySelectorAll('[data-testid="plan-version-row"]')].map(r => ({
		Version: r.dataset.planVersion, State: r.querySelector('[data-testid="plan-version-state"]').textContent}))`)
	require.Equal(t, []version{{"2", "ACTIVE"}, {"1", "ARCHIVED"}}, versions)
	require.Equal(t, []string{"2"}, eval[[]string](s.bundle,
		`[...document.querySelectorAll('[data-testid="plan-version-latest"]')].map(e => e.closest('tr').dataset.planVersion)`))
	require.Equal(t, "true", eval[string](s.bundle, `document.querySelector('[data-testid="plan-version-row"][data-plan-version="2"]').getAttribute('aria-current')`))

	// Its steps graph: the plan's three steps, in dependency columns, with no run status.
	s.do(chromedp.WaitVisible(sel("dag")))
	type step struct{ ID, Column, What, Deps string }
	steps := eval[[]step](s.bundle, `[...document.querySelectorAll('[data-testid="dag"] [data-testid="step"]')].map(n => ({
		ID: n.dataset.stepId, Column: String([...n.parentElement.parentElement.children].indexOf(n.parentElement)),
		What: n.querySelector('.node-what').textContent, Deps: n.querySelector('.node-deps')?.textContent ?? ''}))`)
	require.Equal(t, []step{
		{"charge", "0", "activity echo", ""},
		{"ship", "1", "activity echo", "after charge"},
		{"notify", "1", "waits for signal sent", "after charge"},
	}, steps)
	require.Zero(t, eval[int](s.bundle, `document.querySelectorAll('[data-testid="dag"] [data-testid="step-status"], [data-testid="dag"] button').length`),
		"a plan's graph has no status and no step action")
	s.waitFor(`document.querySelectorAll('.dag-edges path.edge').length === 2`)

	// Its inputSchema, as stored.
	require.JSONEq(t, ordersSchema, eval[string](s.bundle, `document.querySelector('[data-testid="plan-schema-json"]').textContent`))

	// The archived version, from its link: marked, and not startable.
	s.do(chromedp.Click(`[data-testid="plan-version-link"]:not([href$="version=2"])`))
	s.waitFor(`!!document.querySelector('[data-testid="plan-version"][data-plan-version="1"]')`)
	require.Equal(t, ordersPage+"&version=1", eval[string](s.bundle, `location.pathname + location.search`))
	require.Equal(t, "ARCHIVED", eval[string](s.bundle, `document.querySelector('[data-testid="plan-version-shown-state"]').textContent`))
	require.True(t, eval[bool](s.bundle, `document.querySelector('[data-testid="plan-start-submit"]').disabled`))
	require.True(t, eval[bool](s.bundle, visible(`[data-testid="plan-start-archived"]`)))
	require.True(t, eval[bool](s.bundle, visible(`[data-testid="plan-schema-none"]`)))
	s.console.RequireNoErrors(t)
}

// Start run on a plan's page: input that is not JSON is reported and
// nothing is sent; input that fails the schema shows every problem the
// gateway names, and no run exists; valid input starts a run by planRef
// and lands on its page (issue #39, part 1).
func TestPlanStartRun(t *testing.T) {
	t.Parallel()
	s := setupPlans(t)
	s.open(ordersPage)
	s.do(chromedp.WaitVisible(sel("plan-start-form")))
	require.JSONEq(t, `{"total":0,"customer":""}`, eval[string](s.bundle, `document.querySelector('[data-testid="plan-start-input"]').value`),
		"the editor starts from an example of the schema's shape")
	start := func(input string) {
		t.Helper()
		s.do(chromedp.SetValue(sel("plan-start-input"), input), chromedp.Click(sel("plan-start-submit")))
	}
	s.do(chromedp.SendKeys(sel("plan-start-env"), "prod"))

	// Not JSON: said at once, nothing sent.
	start(`{"total": 12,`)
	s.waitFor(visible(`[data-testid="plan-start-json-error"]`))
	require.Contains(t, eval[string](s.bundle, `document.querySelector('[data-testid="plan-start-json-error"]').textContent`), "not valid JSON")
	require.Zero(t, s.rec.count("POST /gateway/v1/runs"), "input that is not JSON is never sent")

	// Fails the schema: each problem, and no run.
	start(`{"total": -1, "coupon": "X"}`)
	s.waitFor(`document.querySelectorAll('[data-testid="plan-start-problem"]').length > 0`)
	type problem struct{ Path, Keyword, Message string }
	problems := eval[[]problem](s.bundle, `[...document.querySelectorAll('[data-testid="plan-start-problem"]')].map(p => ({
		Path: p.querySelector('[data-testid="problem-path"]').textContent,
		Keyword: p.querySelector('[data-testid="problem-keyword"]').textContent,
		Message: p.querySelector('[data-testid="problem-message"]').textContent}))`)
	keywords := map[string]string{} // keyword → path
	for _, p := range problems {
		require.True(t, strings.HasPrefix(p.Path, "input"), "%+v", p)
		require.NotEmpty(t, p.Message, "%+v", p)
		keywords[p.Keyword] = p.Path
	}
	require.ElementsMatch(t, []string{"minimum", "required", "additionalProperties"}, slices.Collect(maps.Keys(keywords)), "%+v", problems)
	require.Equal(t, "input.total", keywords["minimum"], "%+v", problems)
	require.Equal(t, "/plans/orders", eval[string](s.bundle, `location.pathname`), "a refused start stays on the page")
	if path := os.Getenv(envScreenshotPlan); path != "" {
		require.NoError(t, browsertest.Screenshot(s.step(), path))
		t.Logf("wrote %s", path)
	}
	require.Equal(t, 1, s.rec.count("POST /gateway/v1/runs"))
	runs, err := s.client.ListRuns(t.Context(), client.RunFilter{})
	require.NoError(t, err)
	require.Empty(t, runs.Runs, "a refused start starts no run")

	// Valid: the run's page.
	start(`{"total": 12.5, "customer": "ada"}`)
	s.waitFor(`location.pathname.startsWith('/runs/')`)
	runID := strings.TrimPrefix(eval[string](s.bundle, `decodeURIComponent(location.pathname)`), "/runs/")
	s.waitFor(`document.querySelector('[data-testid="run-id"]')?.textContent === ` + js(runID))
	s.waitFor(`!!document.querySelector('[data-testid="run-status"]')`)
	run, err := s.client.GetRun(t.Context(), runID)
	require.NoError(t, err)
	require.Equal(t, []string{"shop", "prod", "orders", "2"}, []string{run.ProjectID, run.EnvironmentID, run.PlanID, run.PlanVersion})
	require.JSONEq(t, `{"total": 12.5, "customer": "ada"}`, string(run.Input))
	runs, err = s.client.ListRuns(t.Context(), client.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs.Runs, 1, "one run: the valid start's")
	require.Equal(t, runID, runs.Runs[0].RunID)
	requireOnlyErrors(t, s, `status of 400 .*/gateway/v1/runs`, `status of 404 .*/v1/runs/`+regexp.QuoteMeta(runID))
}

// A viewer's key sees a plan's page but no Start and no Archive: it may
// not start runs. A version the plan does not have is said to be missing.
func TestPlanViewerCannotStart(t *testing.T) {
	t.Parallel()
	s := setupPlans(t)
	s.do(chromedp.Navigate(s.url + ordersPage + "#token=" + viewerToken))
	s.waitFor(visible(`[data-testid="plan-start-denied"]`))
	require.Zero(t, eval[int](s.bundle, `document.querySelectorAll('[data-testid="plan-start-form"], [data-testid="plan-archive"], [data-testid="plan-restore"]').length`))
	require.True(t, eval[bool](s.bundle, visible(`[data-testid="dag"]`)))
	s.console.RequireNoErrors(t)

	// A version the plan does not have: said, beside the versions it has.
	s.do(chromedp.Navigate(s.url + ordersPage + "&version=9"))
	s.waitFor(visible(`[data-testid="plan-error"]`))
	require.Contains(t, eval[string](s.bundle, `document.querySelector('[data-testid="plan-error"]').textContent`), "orders@9")
	require.Equal(t, 2, eval[int](s.bundle, `document.querySelectorAll('[data-testid="plan-version-row"]').length`))
	require.Zero(t, eval[int](s.bundle, `document.querySelectorAll('[data-testid="plan-version"], [data-testid="dag"]').length`))
	requireOnlyErrors(t, s, `status of 404 .*/gateway/v1/plans/orders/versions/9`)
}

// An operator archives a version from its page (after confirming) and
// restores it.
func TestPlanArchiveRestore(t *testing.T) {
	t.Parallel()
	s := setupPlans(t)
	s.open(ordersPage)
	s.do(chromedp.WaitVisible(sel("plan-archive")), chromedp.Click(sel("plan-archive")), chromedp.WaitVisible(sel("confirm-dialog")))
	require.Contains(t, eval[string](s.bundle, `document.getElementById('confirm-title').textContent`), "orders@2")
	s.do(chromedp.Click(sel("confirm-ok")))
	s.waitFor(`document.querySelector('[data-testid="plan-version-shown-state"]')?.textContent === 'ARCHIVED'`)
	require.Contains(t, eval[string](s.bundle, `document.querySelector('[data-testid="plan-latest"]').textContent`), "every version is archived")
	v, err := s.client.GetPlanVersion(t.Context(), "shop", "orders", "2")
	require.NoError(t, err)
	require.NotNil(t, v.ArchivedAt)

	s.do(chromedp.WaitVisible(sel("plan-restore")), chromedp.Click(sel("plan-restore")))
	s.waitFor(`document.querySelector('[data-testid="plan-version-shown-state"]')?.textContent === 'ACTIVE'`)
	require.Equal(t, "latest: 2", eval[string](s.bundle, `document.querySelector('[data-testid="plan-latest"]').textContent`))
	v, err = s.client.GetPlanVersion(t.Context(), "shop", "orders", "2")
	require.NoError(t, err)
	require.Nil(t, v.ArchivedAt)
	s.console.RequireNoErrors(t)
}

// requireOnlyErrors fails the test when the browser console holds an
// error none of the patterns matches: the failed requests a page makes on
// purpose (a refused start) or rides out (a run's page asked for before
// the run is projected) are logged by the browser as errors.
func requireOnlyErrors(t *testing.T, s *stack, patterns ...string) {
	t.Helper()
	for _, e := range s.console.Errors() {
		ok := false
		for _, p := range patterns {
			ok = ok || regexp.MustCompile(p).MatchString(e)
		}
		require.True(t, ok, "unexpected browser console error: %s", e)
	}
}
