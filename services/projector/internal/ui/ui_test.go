package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/testkit/browsertest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/projector/internal/ui"
)

const token = "weft-test-key"

// stepTimeout bounds one browser step; it is generous because a loaded
// machine can be slow, and no test measures speed.
const stepTimeout = 30 * time.Second

// testPoll is the pages' poll interval in the browser tests
// (ui.Options.PollInterval): what the tests wait for is the same as with
// the defaults, only sooner.
const testPoll = 200 * time.Millisecond

// Environment variables that ask TestScreenshots for PNGs.
const (
	envScreenshot          = "WEFT_UI_SCREENSHOT"           // the run page of the rich fixture
	envScreenshotList      = "WEFT_UI_SCREENSHOT_LIST"      // the runs list
	envScreenshotSchedules = "WEFT_UI_SCREENSHOT_SCHEDULES" // the schedules list, one schedule's skips open
	envScreenshotPlan      = "WEFT_UI_SCREENSHOT_PLAN"      // a plan's page, a refused start's problems shown
)

// ---- Browser tests --------------------------------------------------------

// bundle is one browser test: the fake API, the server that serves it with
// ui.Handler, and a browser tab.
type bundle struct {
	t       *testing.T
	api     *fakeAPI
	url     string
	ctx     context.Context
	console *browsertest.Console
}

// setup serves runs from a fake API beside ui.Handler, as the projector
// mounts them, and starts a browser.
func setup(t *testing.T, runs ...api.RunView) *bundle {
	t.Helper()
	return setupWith(t, ui.Options{PollInterval: testPoll}, runs...)
}

// setupWith is setup with the UI's handler given opts.
func setupWith(t *testing.T, opts ui.Options, runs ...api.RunView) *bundle {
	t.Helper()
	api := newFakeAPI(token, runs...)
	mux := http.NewServeMux()
	api.register(mux)
	mux.Handle("/", ui.Handler(opts))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(api.close) // Runs before srv.Close, which waits for the long polls.
	ctx, console := browsertest.New(t)
	return &bundle{t: t, api: api, url: srv.URL, ctx: ctx, console: console}
}

// step returns a context for one browser step.
func (b *bundle) step() context.Context {
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	b.t.Cleanup(cancel)
	return ctx
}

// do runs browser actions and fails the test on an error.
func (b *bundle) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.step(), actions...))
}

// waitFor waits until the JavaScript expression is truthy.
func (b *bundle) waitFor(expression string) {
	b.t.Helper()
	require.NoError(b.t, browsertest.WaitFor(b.step(), expression))
}

// open loads path with the API key in the fragment and waits for the app.
func (b *bundle) open(path string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.url + path + "#token=" + token))
	b.waitFor(`!!document.querySelector('#app > :not(noscript)')`)
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *bundle, expression string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.step(), chromedp.Evaluate[T](expression))
	require.NoError(b.t, err, expression)
	return v
}

// js quotes v as a JavaScript literal.
func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// sel is a CSS selector for a data-testid.
func sel(testid string) chromedp.CSS {
	return chromedp.CSS(`[data-testid="` + testid + `"]`)
}

// texts returns the text content of every element with the testid.
func texts(b *bundle, testid string) []string {
	b.t.Helper()
	return eval[[]string](b, `[...document.querySelectorAll('[data-testid="`+testid+`"]')].map(e => e.textContent)`)
}

// visible is a JavaScript test that an element is rendered and shown.
func visible(selector string) string {
	return `(e => !!e && !e.hidden && e.getClientRects().length > 0)(document.querySelector(` + js(selector) + `))`
}

func TestSignInThenList(t *testing.T) {
	t.Parallel()
	now := time.Now()
	runs := listFixture(now)
	b := setup(t, runs...)
	b.api.setAlerts([]map[string]any{{
		"code": "PROJECTOR_GAP_DETECTED", "severity": "P1", "runId": runs[4].RunID,
		"message": "runSeq gap after 3", "raisedAt": now.Add(-time.Minute),
	}})

	b.do(chromedp.Navigate(b.url + "/"))
	b.do(chromedp.WaitVisible(sel("signin-token")))
	require.Empty(t, b.api.listCalls(), "no API call without a key")
	b.do(
		chromedp.SendKeys(sel("signin-token"), token),
		chromedp.Click(sel("signin-submit")),
		chromedp.WaitVisible(sel("runs-table")),
	)
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === ` + js(len(runs)))

	ids := eval[[]string](b, `[...document.querySelectorAll('[data-testid="run-row"]')].map(r => r.dataset.runId)`)
	statuses := texts(b, "run-status")
	for i, v := range runs {
		assert.Equal(t, v.RunID, ids[i], "row %d", i)
		assert.Equal(t, string(v.Status), statuses[i], "row %d", i)
	}
	require.Equal(t, []string{"STALE"}, texts(b, "stale-pill"), "the one stale run has a STALE pill")
	b.do(chromedp.WaitVisible(sel("alert")))
	alert := eval[string](b, `document.querySelector('[data-testid="alert"]').textContent`)
	require.Contains(t, alert, "PROJECTOR_GAP_DETECTED")
	require.Contains(t, alert, "runSeq gap after 3")
	require.Equal(t, token, eval[string](b, `localStorage.getItem('weft.token')`))

	// A click on a run opens its page, without a page load.
	b.do(chromedp.Evaluate[chromedp.Void](`window.__same = 1`))
	b.do(chromedp.Click(chromedp.CSS(`[data-run-id="` + runs[2].RunID + `"] a`)))
	b.do(chromedp.WaitVisible(sel("dag")))
	require.Equal(t, "/runs/"+runs[2].RunID, eval[string](b, `location.pathname`))
	require.Equal(t, 1, eval[int](b, `window.__same`), "the router changed the view without reloading")

	// Back returns to the list.
	b.do(chromedp.NavigateBack(), chromedp.WaitVisible(sel("runs-table")))

	b.console.RequireNoErrors(t)
}

func TestTokenFromURLAndSignOut(t *testing.T) {
	t.Parallel()
	b := setup(t, simpleRun(runID(1), events.RunStatusCompleted, time.Now()))

	b.open("/")
	b.do(chromedp.WaitVisible(sel("run-row")))
	require.Empty(t, eval[string](b, `location.hash`), "the token is stripped from the address")
	require.Equal(t, token, eval[string](b, `localStorage.getItem('weft.token')`))

	// A reload without the fragment keeps the key.
	b.do(chromedp.Navigate(b.url+"/"), chromedp.WaitVisible(sel("run-row")))

	b.do(chromedp.Click(sel("signout")), chromedp.WaitVisible(sel("signin-token")))
	require.Nil(t, eval[*string](b, `localStorage.getItem('weft.token')`))
	b.console.RequireNoErrors(t)
}

// A key in the query (?token=KEY) has reached the server's logs: the UI
// never uses it, asks for a key, and strips it from the address and the
// history entry. The fragment's key (#token=KEY) is the only one taken.
func TestTokenInTheQueryIsIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t, simpleRun(runID(1), events.RunStatusCompleted, time.Now()))

	b.do(chromedp.Navigate(b.url + "/?status=COMPLETED&token=" + token))
	b.do(chromedp.WaitVisible(sel("signin-token")))
	require.Nil(t, eval[*string](b, `localStorage.getItem('weft.token')`), "the query's key is not kept")
	require.Equal(t, "?status=COMPLETED", eval[string](b, `location.search`), "the key is stripped from the address")
	require.Empty(t, b.api.listCalls(), "no list request carried the query's key")
	b.console.RequireNoErrors(t)
}

func TestUnauthorizedShowsSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t, simpleRun(runID(1), events.RunStatusRunning, time.Now()))

	b.do(chromedp.Navigate(b.url + "/runs/" + runID(1) + "#token=wrong-key"))
	b.do(chromedp.WaitVisible(sel("signin-error")))
	msg := eval[string](b, `document.querySelector('[data-testid="signin-error"]').textContent`)
	require.Contains(t, msg, "Unauthenticated: missing or unknown API key")
	require.Nil(t, eval[*string](b, `localStorage.getItem('weft.token')`), "a refused key is forgotten")

	// Signing in with the right key shows the page asked for.
	b.do(
		chromedp.SendKeys(sel("signin-token"), token),
		chromedp.Click(sel("signin-submit")),
	)
	b.waitFor(`document.querySelector('[data-testid="run-status"]')?.textContent === 'RUNNING'`)
}

func TestRunNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t, simpleRun(runID(1), events.RunStatusRunning, time.Now()))
	b.open("/runs/" + runID(2))
	b.do(chromedp.WaitVisible(sel("run-not-found")))
	require.Contains(t, eval[string](b, `document.querySelector('[data-testid="run-not-found"]').textContent`), "NotFound: no run "+runID(2))

	// The read side trails the gateway: a run that shows up later is drawn
	// without a reload.
	b.api.update(simpleRun(runID(2), events.RunStatusRunning, time.Now()))
	b.waitFor(`document.querySelector('[data-testid="run-status"]')?.textContent === 'RUNNING'`)

	// A missing run is asked for only while its page is open.
	b.open("/runs/" + runID(3))
	b.do(chromedp.WaitVisible(sel("run-not-found")))
	b.do(chromedp.Click(chromedp.CSS(`.crumbs a`)), chromedp.WaitVisible(sel("run-row")))
	calls := len(b.api.runCalls())
	b.api.update(simpleRun(runID(4), events.RunStatusRunning, time.Now()))
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === 3`)
	require.Len(t, b.api.runCalls(), calls, "the runs list asks for no run")
}

func TestListFilters(t *testing.T) {
	t.Parallel()
	now := time.Now()
	runs := listFixture(now)
	b := setup(t, runs...)
	b.open("/")
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === ` + js(len(runs)))

	b.do(chromedp.Evaluate[chromedp.Void](`(s => { s.value = 'FAILED'; s.dispatchEvent(new Event('change')); })(document.querySelector('[data-testid="filter-status"]'))`))
	b.waitFor(`[...document.querySelectorAll('[data-testid="run-status"]')].every(e => e.textContent === 'FAILED')` +
		` && document.querySelectorAll('[data-testid="run-row"]').length === 1`)
	require.Equal(t, "?status=FAILED", eval[string](b, `location.search`), "the filter is in the address")
	require.True(t, hasQuery(b.api.listCalls(), "status", "FAILED"), "the API is asked for FAILED runs")

	b.do(chromedp.Evaluate[chromedp.Void](`(s => { s.value = 'STALE'; s.dispatchEvent(new Event('change')); })(document.querySelector('[data-testid="filter-status"]'))`))
	b.waitFor(`document.querySelectorAll('[data-testid="stale-pill"]').length === 1 && document.querySelectorAll('[data-testid="run-row"]').length === 1`)
	require.True(t, hasQuery(b.api.listCalls(), "status", "STALE"))

	b.do(chromedp.Evaluate[chromedp.Void](`(s => { s.value = ''; s.dispatchEvent(new Event('change')); })(document.querySelector('[data-testid="filter-status"]'))`))
	b.do(chromedp.SendKeys(sel("filter-plan"), "billing-sync\r"))
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === 2`)
	require.True(t, hasQuery(b.api.listCalls(), "plan", "billing-sync"))
	require.Equal(t, "?plan=billing-sync", eval[string](b, `location.search`))

	// The filters survive a reload, from the address.
	b.do(chromedp.Reload(), chromedp.WaitVisible(sel("run-row")))
	require.Equal(t, "billing-sync", eval[string](b, `document.querySelector('[data-testid="filter-plan"]').value`))
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === 2`)
	b.console.RequireNoErrors(t)
}

// hasQuery reports whether a list request had the query parameter.
func hasQuery(calls []url.Values, key, value string) bool {
	for _, q := range calls {
		if q.Get(key) == value {
			return true
		}
	}
	return false
}

func TestListLoadMoreAndPolling(t *testing.T) {
	t.Parallel()
	now := time.Now()
	var runs []api.RunView
	for i := range 60 {
		runs = append(runs, simpleRun(runID(i+1), events.RunStatusCompleted, now.Add(-time.Duration(i)*time.Minute)))
	}
	b := setup(t, runs...)
	b.open("/")
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === 50`)
	b.do(chromedp.Click(sel("load-more")))
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === 60`)
	require.True(t, hasQuery(b.api.listCalls(), "cursor", "50"), "Load more sends nextCursor")
	b.do(chromedp.WaitNotVisible(sel("load-more")))

	// A new run appears at the top on a later poll, and the rows loaded by
	// "Load more" stay.
	fresh := simpleRun(runID(999), events.RunStatusRunning, now.Add(time.Minute))
	b.api.update(fresh)
	b.waitFor(`document.querySelector('[data-testid="run-row"]').dataset.runId === ` + js(fresh.RunID))
	require.Equal(t, 61, eval[int](b, `document.querySelectorAll('[data-testid="run-row"]').length`))
	b.console.RequireNoErrors(t)
}
