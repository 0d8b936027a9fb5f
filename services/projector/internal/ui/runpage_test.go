package ui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/testkit/browsertest"
	"github.com/weftrun/weft/pkg/events"
)

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
