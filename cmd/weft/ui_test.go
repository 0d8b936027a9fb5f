package main

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/testkit/browsertest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
)

// uiStep bounds one browser step: runs take a few seconds on a loaded
// machine, and a failure should still come well before the test timeout.
const uiStep = time.Minute

// The UI against the whole dev stack in a real headless Chromium: a run
// submitted through the gateway is watched to COMPLETED on its page; PAUSE
// clicked on a running run shows PAUSED; an event injected on the bus past
// a runSeq gap shows the STALE banner.
func TestUIAgainstTheDevStack(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	dev := startDev(t, db, "false")
	uiURL := bannerURL(t, dev.out.String(), "UI:") // …/#token=weft_dev_test_token
	base := uiURL[:len(uiURL)-len("/#token=weft_dev_test_token")]
	c, err := client.New(bannerURL(t, dev.out.String(), "API:"), client.WithToken("weft_dev_test_token"))
	require.NoError(t, err)
	ctx, console := browsertest.New(t)
	do := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		step, cancel := context.WithTimeout(ctx, uiStep)
		defer cancel()
		require.NoError(t, chromedp.Do(step, actions...))
	}
	waitFor := func(expression string) {
		t.Helper()
		step, cancel := context.WithTimeout(ctx, uiStep)
		defer cancel()
		require.NoError(t, browsertest.WaitFor(step, expression))
	}
	statusIs := func(want string) string {
		return `document.querySelector('[data-testid="run-status"]')?.textContent.trim() === ` + quote(t, want)
	}

	// Submit a run and watch it complete, from the runs list to its page.
	done := startRun(t, c, `{"planId":"hello","planVersion":"1","steps":[
		{"id":"a","activity":"echo","input":{"hi":1}},
		{"id":"flaky","activity":"fail-n-times","input":{"key":"ui","times":1},"dependsOn":["a"]},
		{"id":"c","activity":"echo","dependsOn":["a"]}]}`)
	do(chromedp.Navigate(uiURL))
	waitFor(`!!document.querySelector('[data-testid="run-row"][data-run-id=` + quote(t, done) + `]')`)
	do(chromedp.Click(chromedp.CSS(`[data-run-id="` + done + `"] a`)))
	waitFor(statusIs("COMPLETED"))
	waitFor(`document.querySelectorAll('[data-testid="event-row"]').length > 5`)
	if path := os.Getenv("WEFT_UI_SCREENSHOT"); path != "" {
		step, cancel := context.WithTimeout(ctx, uiStep)
		require.NoError(t, browsertest.Screenshot(step, path))
		cancel()
	}

	// PAUSE a running run from its page.
	long := startRun(t, c, `{"planId":"long","planVersion":"1","steps":[
		{"id":"wait","activity":"sleep","input":{"ms":600000}},
		{"id":"after","activity":"echo","dependsOn":["wait"]}]}`)
	// The list shows it once the projector has it; its page before that
	// would answer 404 (which the page rides out, but the browser logs).
	do(chromedp.Navigate(base + "/"))
	waitFor(`!!document.querySelector('[data-testid="run-row"][data-run-id=` + quote(t, long) + `]')`)
	do(chromedp.Navigate(base + "/runs/" + long))
	waitFor(statusIs("RUNNING"))
	do(chromedp.WaitEnabled(chromedp.CSS(`[data-testid="btn-pause"]`)), chromedp.Click(chromedp.CSS(`[data-testid="btn-pause"]`)))
	waitFor(statusIs("PAUSED"))
	waitFor(`document.querySelector('[data-testid="action-result"]')?.textContent.includes('PAUSE')`)

	// A gap: an event two past the log's head appears in the log and on the bus.
	injectGap(t, db, bannerURL(t, dev.out.String(), "NATS:"), long)
	do(chromedp.WaitVisible(chromedp.CSS(`[data-testid="stale-banner"]`)))
	console.RequireNoErrors(t)
}

// startRun starts a run of the plan through the gateway and returns its id.
func startRun(t *testing.T, c *client.Client, planDoc string) string {
	t.Helper()
	var p struct {
		PlanID      string `json:"planId"`
		PlanVersion string `json:"planVersion"`
	}
	require.NoError(t, json.Unmarshal([]byte(planDoc), &p))
	res, err := c.StartRun(t.Context(), api.StartRunRequest{TenantID: devTenant, ProjectID: "demo", EnvironmentID: "dev",
		PlanID: p.PlanID, PlanVersion: p.PlanVersion, Plan: json.RawMessage(planDoc)})
	require.NoError(t, err)
	return res.RunID
}

// injectGap publishes on the bus an event of the run whose runSeq is two
// past the log's head: the projector cannot apply it, and the log does not
// hold the event before it.
func injectGap(t *testing.T, db *weftest.DB, natsURL, runID string) {
	t.Helper()
	head, err := eventlog.New(db.Pool).RunHead(t.Context(), runID)
	require.NoError(t, err)
	ev, err := events.New(events.Spec{RunID: runID, Type: events.RunResumed, PlanVersion: "injected"})
	require.NoError(t, err)
	ev.RunSeq, ev.PersistedAt = head+2, time.Now().UTC()
	// The projector applies only what the log holds (a bus event the log
	// refutes is dropped as forged), so the gap is in the log itself: the
	// event is written at head+2 directly, past the append function.
	_, err = db.Pool.Exec(t.Context(), `INSERT INTO run_events (run_id, run_seq, event_id, event_type,
    idempotency_key, emitted_at, schema_version) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		runID, ev.RunSeq, ev.EventID, string(ev.EventType), ev.IdempotencyKey, ev.EmittedAt, ev.SchemaVersion)
	require.NoError(t, err)
	data, err := json.Marshal(ev)
	require.NoError(t, err)
	nc, err := nats.Connect(natsURL)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	subject, err := streams.EventSubject(runID, ev.EventType)
	require.NoError(t, err)
	_, err = js.Publish(t.Context(), subject, data)
	require.NoError(t, err)
}

// quote returns s as a JavaScript string literal.
func quote(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b)
}
