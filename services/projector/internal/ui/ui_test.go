package ui_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/browsertest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/projector/internal/ui"
)

const token = "weft-test-key"

// stepTimeout bounds one browser step; it is generous because a loaded
// machine can be slow, and no test measures speed.
const stepTimeout = 30 * time.Second

// Environment variables that ask TestScreenshots for PNGs.
const (
	envScreenshot     = "WEFT_UI_SCREENSHOT"      // the run page of the rich fixture
	envScreenshotList = "WEFT_UI_SCREENSHOT_LIST" // the runs list
)

// ---- Handler, without a browser ------------------------------------------

// answer is a response of ui.Handler.
type answer struct {
	status int
	header http.Header
	body   string
}

// get serves one request through ui.Handler.
func get(t *testing.T, h http.Handler, method, path string, header http.Header) answer {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), method, path, nil)
	for k, vs := range header {
		r.Header[k] = vs
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return answer{status: w.Code, header: w.Header(), body: w.Body.String()}
}

// assetPath returns the versioned path of an asset, as index.html names it.
func assetPath(t *testing.T, h http.Handler, name string) string {
	t.Helper()
	index := get(t, h, http.MethodGet, "/", nil).body
	m := regexp.MustCompile(`/ui/[0-9a-f]{12}/` + regexp.QuoteMeta(name)).FindString(index)
	require.NotEmpty(t, m, "index.html names %s under /ui/<version>/", name)
	return m
}

func TestHandlerPages(t *testing.T) {
	t.Parallel()
	h := ui.Handler()
	for _, path := range []string{"/", "/runs/0193a1f4-7c41-7a8e-9d1f-3b2c5e8f4a10", "/runs/anything", "/?status=FAILED&plan=x"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			res := get(t, h, http.MethodGet, path, nil)
			body := res.body
			require.Equal(t, http.StatusOK, res.status)
			require.Equal(t, "text/html; charset=utf-8", res.header.Get("Content-Type"))
			require.Equal(t, "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:", res.header.Get("Content-Security-Policy"))
			require.Equal(t, "no-cache", res.header.Get("Cache-Control"))
			require.Equal(t, "nosniff", res.header.Get("X-Content-Type-Options"))
			require.NotEmpty(t, res.header.Get("ETag"))
			require.Contains(t, body, "<title>Weft</title>")
			require.NotContains(t, body, "{{version}}", "the asset version is filled in")
			require.Regexp(t, `<script type="module" src="/ui/[0-9a-f]{12}/app.js"></script>`, body)
		})
	}
}

func TestHandlerNotFound(t *testing.T) {
	t.Parallel()
	h := ui.Handler()
	version := strings.Split(assetPath(t, h, "app.js"), "/")[2]
	for _, path := range []string{"/runs", "/runs/", "/runs/a/b", "/v1/runs", "/favicon.ico", "/ui/", "/ui/" + version + "/nope.js", "/ui/" + version + "/index.html", "/ui/app.js"} {
		require.Equal(t, http.StatusNotFound, get(t, h, http.MethodGet, path, nil).status, path)
	}
	require.Equal(t, http.StatusMethodNotAllowed, get(t, h, http.MethodPost, "/", nil).status)
}

func TestHandlerAssets(t *testing.T) {
	t.Parallel()
	h := ui.Handler()
	types := map[string]string{
		"app.js":      "text/javascript; charset=utf-8",
		"api.js":      "text/javascript; charset=utf-8",
		"app.css":     "text/css; charset=utf-8",
		"favicon.svg": "image/svg+xml",
	}
	for name, contentType := range types {
		path := assetPath(t, h, "app.js")
		path = strings.TrimSuffix(path, "app.js") + name
		res := get(t, h, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, res.status, path)
		require.Equal(t, contentType, res.header.Get("Content-Type"), name)
		require.Equal(t, "public, max-age=31536000, immutable", res.header.Get("Cache-Control"), name)
		require.Equal(t, "nosniff", res.header.Get("X-Content-Type-Options"))
		require.NotEmpty(t, res.body)

		again := get(t, h, http.MethodGet, path, http.Header{"If-None-Match": {res.header.Get("ETag")}})
		require.Equal(t, http.StatusNotModified, again.status, "a matching If-None-Match answers 304")

		old := get(t, h, http.MethodGet, "/ui/000000000000/"+name, nil)
		require.Equal(t, http.StatusOK, old.status, "another version is still served")
		require.Equal(t, "no-cache", old.header.Get("Cache-Control"), "but not cached for good")
	}

	head := get(t, h, http.MethodHead, "/", nil)
	require.Equal(t, http.StatusOK, head.status)
	require.Empty(t, head.body)
}

// TestAssetsSource checks the rules the UI's source keeps: every relative
// module import names an embedded file, no API data can reach an HTML
// parser, and index.html has no inline script or style (the CSP forbids
// them).
func TestAssetsSource(t *testing.T) {
	t.Parallel()
	files := os.DirFS("assets")
	names, err := fs.Glob(files, "*")
	require.NoError(t, err)
	require.Contains(t, names, "index.html")
	importRE := regexp.MustCompile(`(?m)^import .* from '\./([^']+)';$`)
	forbidden := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function`)
	for _, name := range names {
		b, err := fs.ReadFile(files, name)
		require.NoError(t, err)
		src := string(b)
		if strings.HasSuffix(name, ".js") {
			for _, m := range importRE.FindAllStringSubmatch(src, -1) {
				require.Contains(t, names, m[1], "%s imports ./%s", name, m[1])
			}
			require.NotRegexp(t, forbidden, src, "%s builds DOM with createElement and textContent only", name)
		}
	}
	index, err := fs.ReadFile(files, "index.html")
	require.NoError(t, err)
	scripts := regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(string(index), -1)
	require.NotEmpty(t, scripts)
	for _, m := range scripts {
		require.Contains(t, m[1], ` src="`, "every script is a file")
		require.Empty(t, strings.TrimSpace(m[2]), "no inline script")
	}
	require.NotRegexp(t, `<style|\sstyle=|\son[a-z]+=`, string(index), "no inline style or handler")
}

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
func setup(t *testing.T, runs ...runView) *bundle {
	t.Helper()
	api := newFakeAPI(token, runs...)
	mux := http.NewServeMux()
	api.register(mux)
	mux.Handle("/", ui.Handler())
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
	calls := len(b.api.runCalls())
	b.do(chromedp.Click(chromedp.CSS(`.crumbs a`)), chromedp.WaitVisible(sel("run-row")))
	require.Len(t, b.api.runCalls(), calls, "a missing run is not polled")
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
	var runs []runView
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

func TestRunPage(t *testing.T) {
	t.Parallel()
	now := time.Now()
	rich, evs := richRun(now)
	b := setup(t, rich)
	b.api.setEvents(rich.RunID, evs)
	b.open("/runs/" + rich.RunID)
	b.waitFor(`document.querySelectorAll('[data-testid="step"]').length === 7`)

	// Every plan step is drawn, in dependency columns, with its status.
	type stepView struct {
		ID, Status, Attempt, Delivery, Error string
		Artifacts                            []string
		Column                               int
	}
	steps := eval[[]stepView](b, `[...document.querySelectorAll('[data-testid="step"]')].map(n => ({
		ID: n.dataset.stepId,
		Status: n.querySelector('[data-testid="step-status"]').textContent,
		Attempt: n.querySelector('[data-testid="step-attempt"]')?.textContent ?? '',
		Delivery: n.querySelector('[data-testid="step-delivery"]')?.textContent ?? '',
		Error: n.querySelector('[data-testid="step-error"]')?.textContent ?? '',
		Artifacts: [...n.querySelectorAll('a[data-testid="step-artifact"]')].map(a => a.getAttribute('href')),
		Column: [...n.parentElement.parentElement.children].indexOf(n.parentElement),
	}))`)
	byID := map[string]stepView{}
	for _, s := range steps {
		byID[s.ID] = s
	}
	require.Len(t, byID, 7)
	assert.Equal(t, stepView{ID: "extract", Status: "SUCCESS", Column: 0,
		Artifacts: []string{"https://artifacts.example.com/acme/nightly/raw-2026-11-23.json"}}, byID["extract"])
	assert.Equal(t, stepView{ID: "validate", Status: "SUCCESS", Attempt: "Retry #1", Column: 1,
		Artifacts: []string{"https://artifacts.example.com/acme/nightly/validation.html"}}, byID["validate"])
	assert.Equal(t, "Retry #2", byID["transform"].Attempt)
	assert.Equal(t, "delivery 2", byID["transform"].Delivery)
	assert.Equal(t, "FAILED", byID["transform"].Status)
	assert.Contains(t, byID["transform"].Error, "DBT_COMPILE_ERROR")
	assert.Contains(t, byID["transform"].Error, `column "amount_usd" not found`)
	assert.Empty(t, byID["transform"].Artifacts, "an s3:// uri is shown, not linked")
	assert.Equal(t, "delivery 3", byID["enrich"].Delivery)
	assert.Empty(t, byID["enrich"].Attempt, "logical attempt 1 is no retry")
	assert.Equal(t, 2, byID["approve"].Column)
	assert.Equal(t, stepView{ID: "publish", Status: "PENDING", Column: 3, Artifacts: []string{}}, byID["publish"], "a step with no snapshot is PENDING")
	assert.Equal(t, stepView{ID: "notify", Status: "PENDING", Column: 4, Artifacts: []string{}}, byID["notify"])

	artifactText := eval[string](b, `document.querySelector('[data-step-id="extract"] .artifact').textContent`)
	require.Contains(t, artifactText, "raw-json")
	require.Contains(t, artifactText, "2.4 MB")
	require.Contains(t, eval[string](b, `document.querySelector('[data-step-id="transform"] .artifact').textContent`), "s3://acme-dbt/nightly/manifest.json")
	require.Contains(t, eval[string](b, `document.querySelector('[data-step-id="publish"]').textContent`), "not started")
	require.Contains(t, eval[string](b, `document.querySelector('[data-step-id="approve"]').textContent`), "waits for signal approve")

	// Edges join each dependency to its step.
	b.waitFor(`document.querySelectorAll('.dag-edges path.edge').length === 8`)

	// The header.
	require.Equal(t, []string{"RUNNING"}, texts(b, "run-status"))
	header := eval[string](b, `document.querySelector('.run-head').textContent`)
	for _, want := range []string{rich.RunID, "nightly-ingest", "@v14", "tenantacme", "projectanalytics", "envprod", "Projection lag", "38 ms"} {
		require.Contains(t, header, want)
	}
	require.False(t, eval[bool](b, visible(`[data-testid="stale-banner"]`)))
	require.False(t, eval[bool](b, visible(`[data-testid="run-error"]`)), "only a FAILED run has a root cause")

	// The timeline, with eventData on demand.
	b.waitFor(`document.querySelectorAll('[data-testid="event-row"]').length === ` + js(len(evs)))
	seqs := eval[[]string](b, `[...document.querySelectorAll('[data-testid="event-row"]')].map(r => r.dataset.seq)`)
	require.Equal(t, "1", seqs[0])
	require.Equal(t, "15", seqs[14])
	row := `document.querySelector('[data-testid="event-row"][data-seq="15"]')`
	require.Contains(t, eval[string](b, row+`.textContent`), "StepFailed")
	require.False(t, eval[bool](b, visible(`[data-testid="event-row"][data-seq="15"] + tr [data-testid="event-data"]`)))
	b.do(chromedp.Click(chromedp.CSS(`[data-testid="event-row"][data-seq="15"] [data-testid="event-toggle"]`)))
	b.waitFor(visible(`[data-testid="event-row"][data-seq="15"] + tr [data-testid="event-data"]`))
	data := eval[string](b, `document.querySelector('[data-testid="event-row"][data-seq="15"] + tr [data-testid="event-data"]').textContent`)
	var decoded map[string]any
	require.NoError(t, json.Unmarshal([]byte(data), &decoded), "eventData is shown as JSON")
	require.Contains(t, data, "DBT_COMPILE_ERROR")

	// The events were fetched from afterSeq 0 once.
	b.console.RequireNoErrors(t)
}

func TestFailedRunShowsRootCause(t *testing.T) {
	t.Parallel()
	v := simpleRun(runID(7), events.RunStatusFailed, time.Now())
	b := setup(t, v)
	b.open("/runs/" + v.RunID)
	b.do(chromedp.WaitVisible(sel("run-error")))
	text := eval[string](b, `document.querySelector('[data-testid="run-error"]').textContent`)
	require.Contains(t, text, "UPPER_FAILED")
	require.Contains(t, text, "the shouting service said no")
	require.True(t, eval[bool](b, `document.querySelector('[data-testid="btn-pause"]').disabled`))
	require.True(t, eval[bool](b, `document.querySelector('[data-testid="btn-cancel"]').disabled`), "a FAILED run is over")
	require.Equal(t, []string{"shout"}, eval[[]string](b, `[...document.querySelectorAll('[data-testid="btn-retry-step"]')].map(b => b.dataset.stepId)`))
	b.console.RequireNoErrors(t)
}

func TestStaleBanner(t *testing.T) {
	t.Parallel()
	now := time.Now()
	fine := simpleRun(runID(1), events.RunStatusRunning, now)
	gapped := stale(simpleRun(runID(2), events.RunStatusRunning, now), 7, 9, now)
	b := setup(t, fine, gapped)

	b.open("/runs/" + gapped.RunID)
	b.do(chromedp.WaitVisible(sel("stale-banner")))
	require.Equal(t, "alert", eval[string](b, `document.querySelector('[data-testid="stale-banner"]').getAttribute('role')`))
	banner := eval[string](b, `document.querySelector('[data-testid="stale-banner"]').textContent`)
	require.Contains(t, banner, "STALE")
	require.Equal(t, "7", eval[string](b, `document.querySelector('[data-testid="gap-after"]').textContent`))
	require.Equal(t, "9", eval[string](b, `document.querySelector('[data-testid="gap-seen"]').textContent`))
	require.Equal(t, []string{"STALE"}, texts(b, "stale-pill"))

	// The gap closes: the long poll brings the news and the banner goes.
	healed := gapped
	healed.Stale, healed.Gap, healed.LastEventSeq = false, nil, 10
	b.api.update(healed)
	b.do(chromedp.WaitNotVisible(sel("stale-banner")))
	require.Empty(t, texts(b, "stale-pill"))

	// A run without a gap has no banner.
	b.do(chromedp.Navigate(b.url + "/runs/" + fine.RunID))
	b.waitFor(`document.querySelector('[data-testid="run-status"]')?.textContent === 'RUNNING'`)
	require.False(t, eval[bool](b, visible(`[data-testid="stale-banner"]`)))
	b.console.RequireNoErrors(t)
}

// signalBody decodes the recorded body of a signal.
func signalBody(t *testing.T, c signalCall) (name, id string, payload json.RawMessage, hasPayload bool) {
	t.Helper()
	require.NoError(t, json.Unmarshal(c.Body["signalName"], &name))
	require.NoError(t, json.Unmarshal(c.Body["signalId"], &id))
	payload, hasPayload = c.Body["payload"]
	return name, id, payload, hasPayload
}

func TestActions(t *testing.T) {
	t.Parallel()
	now := time.Now()
	rich, evs := richRun(now)
	b := setup(t, rich)
	b.api.setEvents(rich.RunID, evs)
	b.open("/runs/" + rich.RunID)
	b.do(chromedp.WaitVisible(sel("dag")))
	b.waitFor(`document.querySelector('[data-testid="run-status"]')?.textContent === 'RUNNING'`)
	require.True(t, eval[bool](b, `document.querySelector('[data-testid="btn-resume"]').disabled`), "RESUME needs a PAUSED run")
	require.False(t, eval[bool](b, `document.querySelector('[data-testid="btn-cancel"]').disabled`))

	// PAUSE twice: two signals, two signalIds, no payload.
	b.do(chromedp.WaitEnabled(sel("btn-pause")), chromedp.Click(sel("btn-pause")))
	b.waitFor(`document.querySelector('[data-testid="action-result"]')?.textContent === 'PAUSE accepted'`)
	b.api.setDuplicate(true)
	b.do(chromedp.WaitEnabled(sel("btn-pause")), chromedp.Click(sel("btn-pause")))
	b.waitFor(`document.querySelector('[data-testid="action-result"]')?.textContent === 'PAUSE accepted (duplicate)'`)
	b.api.setDuplicate(false)
	calls := b.api.signalCalls()
	require.Len(t, calls, 2)
	name1, id1, _, has1 := signalBody(t, calls[0])
	name2, id2, _, has2 := signalBody(t, calls[1])
	require.Equal(t, "PAUSE", name1)
	require.Equal(t, "PAUSE", name2)
	require.NotEqual(t, id1, id2, "a fresh signalId per click")
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, id1)
	require.False(t, has1 || has2, "PAUSE has no payload")
	require.Equal(t, rich.RunID, calls[0].RunID)
	require.Equal(t, "Bearer "+token, calls[0].Authorization)
	require.Equal(t, "success", eval[string](b, `document.querySelector('[data-testid="action-result"]').dataset.kind`))

	// Retry a failed step: RETRY_STEP with its stepId.
	b.do(chromedp.Click(chromedp.CSS(`[data-testid="btn-retry-step"][data-step-id="transform"]`)))
	b.waitFor(`document.querySelector('[data-testid="action-result"]')?.textContent === 'RETRY_STEP accepted'`)
	calls = b.api.signalCalls()
	require.Len(t, calls, 3)
	name, _, payload, _ := signalBody(t, calls[2])
	require.Equal(t, "RETRY_STEP", name)
	require.JSONEq(t, `{"stepId": "transform"}`, string(payload))

	// The waitSignal step that is running takes its signal.
	b.do(chromedp.Click(chromedp.CSS(`[data-testid="btn-signal"][data-step-id="approve"]`)))
	b.waitFor(`document.querySelector('[data-testid="action-result"]')?.textContent === 'approve accepted'`)
	calls = b.api.signalCalls()
	require.Len(t, calls, 4)
	name, _, _, hasPayload := signalBody(t, calls[3])
	require.Equal(t, "approve", name)
	require.False(t, hasPayload)

	// CANCEL asks first; "keep running" sends nothing.
	b.do(chromedp.Click(sel("btn-cancel")), chromedp.WaitVisible(sel("confirm-dismiss")))
	b.do(chromedp.Click(sel("confirm-dismiss")), chromedp.WaitNotVisible(sel("confirm-dialog")))
	require.Len(t, b.api.signalCalls(), 4)
	b.do(chromedp.Click(sel("btn-cancel")), chromedp.WaitVisible(sel("confirm-ok")), chromedp.Click(sel("confirm-ok")))
	b.waitFor(`document.querySelector('[data-testid="action-result"]')?.textContent === 'CANCEL accepted'`)
	calls = b.api.signalCalls()
	require.Len(t, calls, 5)
	name, _, _, _ = signalBody(t, calls[4])
	require.Equal(t, "CANCEL", name)
	b.console.RequireNoErrors(t)
}

func TestActionError(t *testing.T) {
	t.Parallel()
	v := simpleRun(runID(3), events.RunStatusPaused, time.Now())
	b := setup(t, v)
	b.api.setSignalError(&apiError{http.StatusForbidden, "PermissionDenied", "role viewer may not send signals"})
	b.open("/runs/" + v.RunID)
	b.do(chromedp.WaitEnabled(sel("btn-resume")))
	require.True(t, eval[bool](b, `document.querySelector('[data-testid="btn-pause"]').disabled`), "PAUSE needs a RUNNING run")
	b.do(chromedp.Click(sel("btn-resume")))
	b.waitFor(`document.querySelector('[data-testid="action-result"]')?.dataset.kind === 'error'`)
	require.Equal(t, "PermissionDenied: role viewer may not send signals",
		eval[string](b, `document.querySelector('[data-testid="action-result"]').textContent`))
	name, _, _, _ := signalBody(t, b.api.signalCalls()[0])
	require.Equal(t, "RESUME", name)
	b.do(chromedp.WaitEnabled(sel("btn-resume")))
}

func TestLongPollUpdatesPage(t *testing.T) {
	t.Parallel()
	now := time.Now()
	v := simpleRun(runID(5), events.RunStatusRunning, now)
	b := setup(t, v)
	b.open("/runs/" + v.RunID)
	b.waitFor(`document.querySelector('[data-testid="run-status"]')?.textContent === 'RUNNING'`)
	b.do(chromedp.Evaluate[chromedp.Void](`window.__same = 1`))

	// Wait until the page is holding a long poll for the next event.
	require.NoError(t, waitUntil(b.step(), func() bool {
		return hasQuery(b.api.runCalls(), "waitForSeq", "5")
	}))
	for _, q := range b.api.runCalls() {
		if q.Has("waitForSeq") {
			require.Equal(t, "25s", q.Get("timeout"))
		}
	}

	done := simpleRun(v.RunID, events.RunStatusCompleted, now)
	b.api.update(done)
	b.waitFor(`document.querySelector('[data-testid="run-status"]')?.textContent === 'COMPLETED'`)
	require.Equal(t, 1, eval[int](b, `window.__same`), "no reload")
	require.Equal(t, []string{"SUCCESS", "SUCCESS"}, texts(b, "step-status"))
	require.True(t, eval[bool](b, `document.querySelector('[data-testid="btn-cancel"]').disabled`))

	// The next long poll waits for the event after the new snapshot.
	require.NoError(t, waitUntil(b.step(), func() bool {
		return hasQuery(b.api.runCalls(), "waitForSeq", "8")
	}))
	b.console.RequireNoErrors(t)
}

func TestEscapesAPIText(t *testing.T) {
	t.Parallel()
	now := time.Now()
	v := simpleRun(runID(9), events.RunStatusFailed, now)
	v.PlanID = xss
	v.Plan.Steps[1].ID = xss
	v.Plan.Steps[1].DependsOn = []string{"greet"}
	v.Steps[1].StepID = xss
	v.Steps[1].Error.Message = `<img src=x onerror="document.body.dataset.pwned=1">`
	v.Error = v.Steps[1].Error
	b := setup(t, v)

	b.open("/")
	b.do(chromedp.WaitVisible(sel("run-row")))
	require.Contains(t, eval[string](b, `document.querySelector('[data-testid="run-row"]').textContent`), xss)

	b.open("/runs/" + v.RunID)
	b.waitFor(`[...document.querySelectorAll('[data-testid="step"]')].some(n => n.dataset.stepId === ` + js(xss) + `)`)
	node := `[...document.querySelectorAll('[data-testid="step"]')].find(n => n.dataset.stepId === ` + js(xss) + `)`
	require.Contains(t, eval[string](b, node+`.querySelector('.node-id').textContent`), xss)
	require.Contains(t, eval[string](b, node+`.querySelector('[data-testid="step-error"]').textContent`), `onerror="document.body.dataset.pwned=1"`)
	require.Contains(t, eval[string](b, `document.querySelector('[data-testid="run-error"]').textContent`), `<img src=x`)
	require.Equal(t, 0, eval[int](b, `document.querySelectorAll('#app img').length`), "no markup from the API became an element")
	require.Empty(t, eval[string](b, `document.body.dataset.pwned ?? ''`))
	b.console.RequireNoErrors(t)
}

// TestScreenshots renders the rich run and the runs list and checks both;
// with WEFT_UI_SCREENSHOT (and WEFT_UI_SCREENSHOT_LIST) set to a path, it
// also writes full-page PNGs there, for the docs.
func TestScreenshots(t *testing.T) {
	t.Parallel()
	now := time.Now()
	rich, evs := richRun(now)
	runs := listFixture(now)
	runs[0] = rich
	b := setup(t, runs...)
	b.api.setEvents(rich.RunID, evs)

	b.open("/")
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === ` + js(len(runs)))
	if path := os.Getenv(envScreenshotList); path != "" {
		require.NoError(t, browsertest.Screenshot(b.step(), path))
		t.Logf("wrote %s", path)
	}

	b.open("/runs/" + rich.RunID)
	b.waitFor(`document.querySelectorAll('[data-testid="step"]').length === 7` +
		` && document.querySelectorAll('[data-testid="event-row"]').length === ` + js(len(evs)) +
		` && document.querySelectorAll('.dag-edges path.edge').length === 8`)
	if path := os.Getenv(envScreenshot); path != "" {
		b.do(chromedp.Click(chromedp.CSS(`[data-testid="event-row"][data-seq="15"] [data-testid="event-toggle"]`)))
		b.waitFor(visible(`[data-testid="event-row"][data-seq="15"] + tr [data-testid="event-data"]`))
		require.NoError(t, browsertest.Screenshot(b.step(), path))
		t.Logf("wrote %s", path)
	}
	b.console.RequireNoErrors(t)
}

// waitUntil polls cond until it holds or ctx ends.
func waitUntil(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
