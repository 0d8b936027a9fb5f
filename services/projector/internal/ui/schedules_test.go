package ui_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/testkit/browsertest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// scheduleRow is what the list shows of one schedule. Times are the
// datetime attributes of the <time> elements, which carry the API's string.
type scheduleRow struct {
	ID, Plan, Cron, State        string
	Policies                     []string
	Next, NextText, NextRelative string
	Buffered                     string
	Last, LastText, LastRun      string
	SkippedTotal                 string
	SkippedReasons               []string
	Toggle                       bool
}

// readScheduleRows reads every schedule row of the page.
func readScheduleRows(b *bundle) []scheduleRow {
	b.t.Helper()
	return eval[[]scheduleRow](b, `[...document.querySelectorAll('[data-testid="schedule-row"]')].map(r => {
		const q = (id) => r.querySelector('[data-testid="' + id + '"]');
		return {
			ID: r.dataset.scheduleId,
			Plan: q('schedule-plan').textContent,
			Cron: q('schedule-cron').textContent,
			State: q('schedule-state').textContent,
			Policies: [...q('schedule-policies').querySelectorAll('[data-policy]')].map(c => c.dataset.policy + ': ' + c.textContent),
			Next: q('schedule-next-fire').querySelector(':scope > time')?.getAttribute('datetime') ?? '',
			NextText: q('schedule-next-fire').textContent,
			NextRelative: q('schedule-next-relative')?.textContent ?? '',
			Buffered: q('schedule-buffered')?.querySelector('time').getAttribute('datetime') ?? '',
			Last: q('schedule-last-fire').querySelector(':scope > time')?.getAttribute('datetime') ?? '',
			LastText: q('schedule-last-fire').textContent,
			LastRun: q('schedule-last-run')?.getAttribute('href') ?? '',
			SkippedTotal: q('schedule-skipped-total').textContent,
			SkippedReasons: [...r.querySelectorAll('[data-testid="schedule-skipped-reason"]')].map(e => e.dataset.reason + ': ' + e.textContent),
			Toggle: !q('schedule-skips-toggle').hidden,
		};
	})`)
}

// rowCount is a JavaScript test that the page shows n schedule rows.
func rowCount(n int) string {
	return `document.querySelectorAll('[data-testid="schedule-row"]').length === ` + js(n)
}

func TestSchedulesList(t *testing.T) {
	t.Parallel()
	now := time.Now()
	fixture := scheduleFixture(now)
	b := setup(t)
	b.api.setSchedule(fixture...)

	// The top nav leads to the list, without a page load.
	b.open("/")
	b.do(chromedp.Evaluate[chromedp.Void](`window.__same = 1`))
	b.do(chromedp.Click(sel("nav-schedules")), chromedp.WaitVisible(sel("schedules-table")))
	b.waitFor(rowCount(len(fixture)))
	require.Equal(t, "/schedules", eval[string](b, `location.pathname`))
	require.Equal(t, "Schedules · Weft", eval[string](b, `document.title`))
	require.Equal(t, 1, eval[int](b, `window.__same`), "the router changed the view without reloading")
	require.Equal(t, "page", eval[string](b, `document.querySelector('[data-testid="nav-schedules"]').getAttribute('aria-current')`))
	require.False(t, eval[bool](b, `document.querySelector('[data-testid="nav-runs"]').hasAttribute('aria-current')`))
	require.True(t, hasQuery(b.api.scheduleCalls(), "limit", "50"), "the first page asks for 50")

	none := []string{}
	policies := func(misfire, overlap string) []string {
		return []string{"misfire: misfire " + misfire, "overlap: overlap " + overlap}
	}
	at := func(p *time.Time) string { return apiTime(*p) }
	want := []scheduleRow{{
		ID: "billing-daily", Plan: "billing-sync@v3", Cron: "0 9 * * 1-5 · Europe/Paris", State: "ACTIVE",
		Policies: policies("skip", "skip"), Next: at(fixture[0].NextFireAt), NextRelative: "in 2h",
		Last: at(fixture[0].LastFireAt), LastRun: "/runs/" + runID(101), SkippedTotal: "0", SkippedReasons: none,
	}, {
		ID: "hourly-export", Plan: "hello@v1", Cron: "0 * * * * · UTC", State: "ACTIVE",
		Policies: policies("skip", "buffer-one"), Next: at(fixture[1].NextFireAt), NextRelative: "in 50m",
		Buffered: at(fixture[1].BufferedFireAt), Last: at(fixture[1].LastFireAt), LastRun: "/runs/" + runID(102),
		SkippedTotal: "0", SkippedReasons: none,
	}, {
		ID: "leap-day", Plan: "hello@v1", Cron: "0 0 30 2 * · UTC", State: "ACTIVE",
		Policies: policies("skip", "skip"), NextText: "—", LastText: "never", SkippedTotal: "0", SkippedReasons: none,
	}, {
		ID: "new-report", Plan: "report@v1", Cron: "0 9 * * * · UTC", State: "ACTIVE",
		Policies: policies("compress", "allow"), Next: at(fixture[3].NextFireAt), NextRelative: "in 45m",
		LastText: "never", SkippedTotal: "0", SkippedReasons: none,
	}, {
		ID: "nightly-ingest", Plan: "nightly-ingest@v14", Cron: "30 2 * * * · UTC", State: "PAUSED",
		Policies: policies("catchup · max 5", "cancel-previous"), NextText: "—paused", NextRelative: "paused",
		Last: at(fixture[4].LastFireAt), LastRun: "/runs/" + runID(103), SkippedTotal: "0", SkippedReasons: none,
	}, {
		ID: "partner-sync", Plan: "hello@v1", Cron: "*/5 * * * * · America/New_York", State: "ACTIVE",
		Policies: policies("catchup · max 3", "skip"), Next: at(fixture[5].NextFireAt), NextRelative: "in 4m",
		Last: at(fixture[5].LastFireAt), LastRun: "/runs/" + runID(104), SkippedTotal: "24", Toggle: true,
		SkippedReasons: []string{"misfire: 12 misfire", "overlap: 7 overlap", "catchup_limit: 3 catchup limit", "refused: 2 refused"},
	}}
	// The last fire's relative time, then the link to its run.
	lastAgo := map[string]string{"billing-daily": "21h ago", "hourly-export": "1h ago", "nightly-ingest": "27h ago", "partner-sync": "1m ago"}
	got := readScheduleRows(b)
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		if w.Next != "" { // The text holds the absolute time too; checked below.
			w.NextText = g.NextText
			require.Contains(t, g.NextText, w.NextRelative, w.ID)
		}
		if w.Last != "" {
			w.LastText = g.LastText
			id := strings.TrimPrefix(w.LastRun, "/runs/")
			require.Contains(t, g.LastText, lastAgo[w.ID]+" · run "+id[:8]+"…"+id[len(id)-6:], w.ID)
		}
		assert.Equal(t, w, g, "row %d", i)
	}

	// Every absolute time is its instant in the viewer's zone.
	times := eval[[]string](b, `[...document.querySelectorAll('#app time.fire-time')].filter(e => e.textContent !== new Date(e.getAttribute('datetime')).toLocaleString(undefined,
		{day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false})).map(e => e.outerHTML)`)
	require.Empty(t, times)
	require.Equal(t, "6 schedules", eval[string](b, `document.querySelector('[data-testid="schedules-summary"]').textContent`))
	require.False(t, eval[bool](b, visible(`[data-testid="load-more"]`)))
	require.False(t, eval[bool](b, visible(`[data-testid="schedules-empty"]`)))
	require.False(t, eval[bool](b, visible(`[data-testid="schedules-error"]`)))
	b.console.RequireNoErrors(t)
}

func TestSchedulesRecentSkips(t *testing.T) {
	t.Parallel()
	fixture := scheduleFixture(time.Now())
	heavy := fixture[5]
	b := setup(t)
	b.api.setSchedule(fixture...)
	b.open("/schedules")
	b.waitFor(rowCount(len(fixture)))

	skips := `[data-testid="schedule-skips"][data-schedule-id="partner-sync"]`
	toggle := `[data-schedule-id="partner-sync"] [data-testid="schedule-skips-toggle"]`
	require.False(t, eval[bool](b, visible(skips)), "the recent skips start hidden")
	require.Equal(t, "false", eval[string](b, `document.querySelector(`+js(toggle)+`).getAttribute('aria-expanded')`))
	require.Contains(t, eval[string](b, `document.querySelector(`+js(toggle)+`).textContent`), "Recent (4)")
	b.do(chromedp.Click(chromedp.CSS(toggle)))
	b.waitFor(visible(skips))
	require.Equal(t, "true", eval[string](b, `document.querySelector(`+js(toggle)+`).getAttribute('aria-expanded')`))

	// Newest first: the API lists them oldest first.
	type skipRow struct {
		Reason, Label, Count, Message string
		Range                         []string
	}
	readSkips := func() []skipRow {
		return eval[[]skipRow](b, `[...document.querySelectorAll('`+skips+` [data-testid="schedule-skip-row"]')].map(r => ({
			Reason: r.dataset.reason,
			Label: r.querySelector('[data-testid="schedule-skip-reason"]').textContent,
			Count: r.querySelector('[data-testid="schedule-skip-count"]').textContent,
			Message: r.querySelector('[data-testid="schedule-skip-message"]').textContent,
			Range: [...r.querySelectorAll('[data-testid="schedule-skip-range"] time')].map(e => e.getAttribute('datetime')),
		}))`)
	}
	k := heavy.RecentSkips
	want := []skipRow{
		{Reason: "refused", Label: "refused", Count: "1", Message: refusal, Range: []string{apiTime(k[3].From)}},
		{Reason: "overlap", Label: "overlap", Count: "1", Message: "—", Range: []string{apiTime(k[2].From)}},
		{Reason: "catchup_limit", Label: "catchup limit", Count: "3", Message: "—", Range: []string{apiTime(k[1].From), apiTime(k[1].To)}},
		{Reason: "misfire", Label: "misfire", Count: "12", Message: "—", Range: []string{apiTime(k[0].From), apiTime(k[0].To)}},
	}
	require.Equal(t, want, readSkips())
	if path := os.Getenv(envScreenshotSchedules); path != "" {
		require.NoError(t, browsertest.Screenshot(b.step(), path))
		t.Logf("wrote %s", path)
	}
	require.Contains(t, eval[string](b, `document.querySelector('`+skips+` [data-testid="schedule-skip-row"]:last-child [data-testid="schedule-skip-range"]').textContent`), " – ")
	require.Equal(t, 0, eval[int](b, `document.querySelectorAll('#app img').length`), "a message is text, never markup")

	// The expansion survives a refresh.
	calls := len(b.api.scheduleCalls())
	require.NoError(t, waitUntil(b.step(), func() bool { return len(b.api.scheduleCalls()) > calls+1 }))
	b.waitFor(rowCount(len(fixture)))
	require.True(t, eval[bool](b, visible(skips)))
	require.Equal(t, want, readSkips())

	b.do(chromedp.Click(chromedp.CSS(toggle)))
	b.do(chromedp.WaitNotVisible(chromedp.CSS(skips)))
	require.Equal(t, "false", eval[string](b, `document.querySelector(`+js(toggle)+`).getAttribute('aria-expanded')`))
	b.console.RequireNoErrors(t)
}

func TestSchedulesLastRunLink(t *testing.T) {
	t.Parallel()
	fixture := scheduleFixture(time.Now())
	b := setup(t, simpleRun(runID(101), events.RunStatusCompleted, time.Now()))
	b.api.setSchedule(fixture...)
	b.open("/schedules")
	b.waitFor(rowCount(len(fixture)))
	b.do(chromedp.Evaluate[chromedp.Void](`window.__same = 1`))

	b.do(chromedp.Click(chromedp.CSS(`[data-schedule-id="billing-daily"] [data-testid="schedule-last-run"]`)))
	b.waitFor(`document.querySelector('[data-testid="run-status"]')?.textContent === 'COMPLETED'`)
	require.Equal(t, "/runs/"+runID(101), eval[string](b, `location.pathname`))
	require.Equal(t, 1, eval[int](b, `window.__same`), "the router changed the view without reloading")
	require.Equal(t, "page", eval[string](b, `document.querySelector('[data-testid="nav-runs"]').getAttribute('aria-current')`))

	b.do(chromedp.NavigateBack(), chromedp.WaitVisible(sel("schedules-table")))
	b.waitFor(rowCount(len(fixture)))
	b.console.RequireNoErrors(t)
}

func TestSchedulesLoadMore(t *testing.T) {
	t.Parallel()
	now := time.Now()
	b := setup(t)
	for i := range 60 {
		b.api.setSchedule(schedule(fmt.Sprintf("s-%03d", i), now))
	}
	b.open("/schedules")
	b.waitFor(rowCount(50))
	require.Equal(t, "50+ schedules", eval[string](b, `document.querySelector('[data-testid="schedules-summary"]').textContent`))

	b.do(chromedp.Click(sel("load-more")))
	b.waitFor(rowCount(60))
	cursor := base64.RawURLEncoding.EncodeToString([]byte("s-049"))
	require.True(t, hasQuery(b.api.scheduleCalls(), "cursor", cursor), "Load more sends nextCursor")
	b.do(chromedp.WaitNotVisible(sel("load-more")))
	require.Equal(t, "60 schedules", eval[string](b, `document.querySelector('[data-testid="schedules-summary"]').textContent`))
	ids := eval[[]string](b, `[...document.querySelectorAll('[data-testid="schedule-row"]')].map(r => r.dataset.scheduleId)`)
	require.Equal(t, "s-000", ids[0])
	require.Equal(t, "s-059", ids[59])

	// The refresh asks for every row shown, and they all stay.
	require.NoError(t, waitUntil(b.step(), func() bool { return hasQuery(b.api.scheduleCalls(), "limit", "60") }))
	b.waitFor(rowCount(60))
	b.console.RequireNoErrors(t)
}

func TestSchedulesPolling(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	fixture := scheduleFixture(now)
	b := setup(t)
	b.api.setSchedule(fixture...)
	b.open("/schedules")
	b.waitFor(rowCount(len(fixture)))
	b.do(chromedp.Evaluate[chromedp.Void](`window.__same = 1`))

	// billing-daily is paused after a fire that an overlap skipped; a new
	// schedule sorts first.
	changed := fixture[0]
	changed.Paused = true
	changed.LastFireAt, changed.LastRunID = ptr(now.Add(-2*time.Minute)), runID(200)
	changed.Skipped.Overlap = 1
	changed.RecentSkips = []api.SkippedFires{{Reason: api.SkipOverlap, From: now.Add(-time.Minute), To: now.Add(-time.Minute), Count: 1, RecordedAt: now}}
	b.api.setSchedule(changed, schedule("a-first", now))

	row := `document.querySelector('[data-schedule-id="billing-daily"]')`
	b.waitFor(row + `?.querySelector('[data-testid="schedule-state"]').textContent === 'PAUSED'` +
		` && ` + row + `.querySelector('[data-testid="schedule-last-run"]').getAttribute('href') === ` + js("/runs/"+runID(200)) +
		` && ` + row + `.querySelector('[data-testid="schedule-skipped-total"]').textContent === '1'` +
		` && document.querySelector('[data-testid="schedule-row"]').dataset.scheduleId === 'a-first'`)
	require.Equal(t, len(fixture)+1, eval[int](b, `document.querySelectorAll('[data-testid="schedule-row"]').length`))
	require.True(t, eval[bool](b, `!`+row+`.querySelector('[data-testid="schedule-skips-toggle"]').hidden`), "a first recent skip shows the toggle")
	require.Equal(t, "paused", eval[string](b, row+`.querySelector('[data-testid="schedule-next-relative"]').textContent`), "paused: no next fire")
	require.False(t, eval[bool](b, row+`.querySelector('[data-testid="schedule-next-fire"] time') !== null`))
	require.Equal(t, 1, eval[int](b, `window.__same`), "no reload")
	b.console.RequireNoErrors(t)
}

func TestSchedulesEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.open("/schedules")
	b.do(chromedp.WaitVisible(sel("schedules-empty")))
	text := eval[string](b, `document.querySelector('[data-testid="schedules-empty"]').textContent`)
	require.Contains(t, text, "No schedules yet")
	require.Contains(t, text, "weft schedule create")
	require.Equal(t, "0 schedules", eval[string](b, `document.querySelector('[data-testid="schedules-summary"]').textContent`))
	require.False(t, eval[bool](b, visible(`[data-testid="load-more"]`)))
	require.False(t, eval[bool](b, visible(`[data-testid="schedules-error"]`)))

	// The first schedule replaces the empty state on a later refresh.
	b.api.setSchedule(schedule("first", time.Now()))
	b.waitFor(rowCount(1) + ` && !document.querySelector('[data-testid="schedules-empty"]')`)
	b.console.RequireNoErrors(t)
}

func TestSchedulesError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.api.setScheduleError(&apiError{http.StatusBadGateway, "Unavailable", "the gateway is unreachable; retry"})
	b.open("/schedules")
	b.do(chromedp.WaitVisible(sel("schedules-error")))
	require.Equal(t, "Could not load schedules — Unavailable: the gateway is unreachable; retry. Retrying…",
		eval[string](b, `document.querySelector('[data-testid="schedules-error"]').textContent`))
	require.Equal(t, "alert", eval[string](b, `document.querySelector('[data-testid="schedules-error"]').getAttribute('role')`))
	require.Equal(t, "error", eval[string](b, `document.getElementById('live').dataset.state`))
	require.False(t, eval[bool](b, visible(`[data-testid="schedules-empty"]`)), "no empty state before an answer")

	// The gateway comes back: the next refresh clears the error.
	b.api.setSchedule(scheduleFixture(time.Now())...)
	b.api.setScheduleError(nil)
	b.waitFor(rowCount(6) + ` && document.querySelector('[data-testid="schedules-error"]').hidden`)
	require.Equal(t, "live", eval[string](b, `document.getElementById('live').dataset.state`))
}

func TestSchedulesUnauthorized(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.api.setSchedule(scheduleFixture(time.Now())...)
	b.do(chromedp.Navigate(b.url + "/schedules#token=wrong-key"))
	b.do(chromedp.WaitVisible(sel("signin-error")))
	require.Contains(t, eval[string](b, `document.querySelector('[data-testid="signin-error"]').textContent`),
		"Unauthenticated: missing or unknown API key")
	require.Nil(t, eval[*string](b, `localStorage.getItem('weft.token')`), "a refused key is forgotten")

	b.do(
		chromedp.SendKeys(sel("signin-token"), token),
		chromedp.Click(sel("signin-submit")),
	)
	b.waitFor(rowCount(6))
	require.Equal(t, "/schedules", eval[string](b, `location.pathname`))
}
