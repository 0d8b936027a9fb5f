package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// A paused schedule shows no next fire, and every fire time shows in the
// viewer's zone and, when it is another, in the schedule's (issue #19,
// item 13). The browser's zone is Asia/Tokyo, which no schedule has.
func TestSchedulesPausedAndZones(t *testing.T) {
	t.Parallel()
	fixture := scheduleFixture(time.Now())
	b := setup(t)
	b.api.setSchedule(fixture...)
	b.do(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"})
		return err
	}))
	b.open("/schedules")
	b.waitFor(rowCount(len(fixture)))
	require.Equal(t, "Asia/Tokyo", eval[string](b, `Intl.DateTimeFormat().resolvedOptions().timeZone`))

	paused := `document.querySelector('[data-schedule-id="nightly-ingest"] [data-testid="schedule-next-fire"]')`
	require.False(t, eval[bool](b, paused+`.querySelector('time') !== null`), "a paused schedule shows no next fire")
	require.Equal(t, "paused", eval[string](b, paused+`.querySelector('[data-testid="schedule-next-relative"]').textContent`))

	type zoned struct{ Schedule, Zone, Viewer, There string }
	got := eval[[]zoned](b, `[...document.querySelectorAll('[data-testid="schedule-row"] time.fire-time')].map(t => {
		const z = t.nextElementSibling;
		const opts = {day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false};
		const at = new Date(t.getAttribute('datetime'));
		const ok = t.textContent === at.toLocaleString(undefined, {...opts, timeZone: 'Asia/Tokyo'});
		return {
			Schedule: t.closest('[data-testid="schedule-row"]').dataset.scheduleId,
			Zone: z?.dataset.zone ?? '',
			Viewer: ok ? 'Asia/Tokyo' : t.textContent,
			There: z ? (z.textContent === at.toLocaleString(undefined, {...opts, timeZone: z.dataset.zone}) + ' ' + z.dataset.zone ? 'ok' : z.textContent) : '',
		};
	})`)
	tz := map[string]string{"billing-daily": "Europe/Paris", "partner-sync": "America/New_York"}
	seen := map[string]int{}
	for _, g := range got {
		zone := tz[g.Schedule]
		if zone == "" {
			zone = "UTC"
		}
		seen[g.Schedule]++
		if g.Zone == "" { // the buffered fire time shows in the viewer's zone only
			require.Equal(t, "hourly-export", g.Schedule, "%+v", g)
			continue
		}
		require.Equal(t, zoned{g.Schedule, zone, "Asia/Tokyo", "ok"}, g)
	}
	// next and last fire of each, but the paused one's next, the ended
	// one's and the never-fired ones' last, plus one buffered time.
	require.Equal(t, map[string]int{"billing-daily": 2, "hourly-export": 3, "new-report": 1, "nightly-ingest": 1, "partner-sync": 2}, seen)
	b.console.RequireNoErrors(t)
}

// An operator's key pauses, resumes and deletes a schedule from the page;
// delete asks first (issue #19, item 13).
func TestSchedulesManage(t *testing.T) {
	t.Parallel()
	fixture := scheduleFixture(time.Now())
	b := setup(t)
	b.api.setSchedule(fixture...)
	b.open("/schedules")
	b.waitFor(rowCount(len(fixture)))
	b.waitFor(`document.querySelector('[data-testid="schedules-table"]').dataset.manage === 'true'`)
	b.waitFor(`document.querySelectorAll('[data-testid="schedule-pause"], [data-testid="schedule-resume"]').length === 6`)
	require.Equal(t, 6, eval[int](b, `document.querySelectorAll('[data-testid="schedule-delete"]').length`))
	require.Equal(t, []string{"nightly-ingest"}, eval[[]string](b,
		`[...document.querySelectorAll('[data-testid="schedule-resume"]')].map(e => e.dataset.scheduleId)`), "only the paused one resumes")

	button := func(action, id string) chromedp.CSS {
		return chromedp.CSS(`[data-testid="schedule-` + action + `"][data-schedule-id="` + id + `"]`)
	}
	state := func(id string) string {
		return `document.querySelector('[data-schedule-id="` + id + `"] [data-testid="schedule-state"]').textContent`
	}
	b.do(chromedp.Click(button("pause", "billing-daily")))
	b.waitFor(state("billing-daily") + ` === 'PAUSED'`)
	b.waitFor(`!!document.querySelector('[data-testid="schedule-resume"][data-schedule-id="billing-daily"]')`)
	require.Contains(t, eval[string](b, `document.querySelector('[data-testid="action-result"]').textContent`), "Schedule billing-daily paused")

	b.do(chromedp.Click(button("resume", "nightly-ingest")))
	b.waitFor(state("nightly-ingest") + ` === 'ACTIVE'`)

	// Delete asks; kept, nothing is sent.
	b.do(chromedp.Click(button("delete", "leap-day")), chromedp.WaitVisible(sel("confirm-dialog")), chromedp.Click(sel("confirm-dismiss")))
	b.do(chromedp.Click(button("delete", "leap-day")), chromedp.WaitVisible(sel("confirm-dialog")))
	require.Contains(t, eval[string](b, `document.getElementById('confirm-title').textContent`), "leap-day")
	b.do(chromedp.Click(sel("confirm-ok")))
	b.waitFor(rowCount(len(fixture) - 1))
	require.False(t, eval[bool](b, `!!document.querySelector('[data-schedule-id="leap-day"]')`))
	require.Equal(t, []string{
		"POST /v1/schedules/billing-daily/pause",
		"POST /v1/schedules/nightly-ingest/resume",
		"DELETE /v1/schedules/leap-day",
	}, b.api.scheduleActionCalls())
	b.console.RequireNoErrors(t)
}

// A viewer's key sees the schedules but no action: it may not manage them.
func TestSchedulesViewerHasNoActions(t *testing.T) {
	t.Parallel()
	fixture := scheduleFixture(time.Now())
	b := setup(t)
	b.api.setSchedule(fixture...)
	b.do(chromedp.Navigate(b.url + "/schedules#token=" + viewerToken))
	b.waitFor(rowCount(len(fixture)))
	b.waitFor(`document.querySelector('[data-testid="schedules-table"]').dataset.manage === 'false'`)
	require.Zero(t, eval[int](b, `document.querySelectorAll('[data-testid^="schedule-pause"], [data-testid="schedule-resume"], [data-testid="schedule-delete"]').length`))
	require.False(t, eval[bool](b, visible(`th.cell-actions`)))
	require.False(t, eval[bool](b, visible(`td.cell-actions`)))
	require.Empty(t, b.api.scheduleActionCalls())
	b.console.RequireNoErrors(t)
}
