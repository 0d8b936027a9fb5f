package ui_test

import (
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// The Triggers page lists the tenant's triggers with their plan, their
// run input and how to send one an event (issue #19, item 13).
func TestTriggersList(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	b := setup(t)
	b.api.setTriggers(
		api.Trigger{TriggerID: "orders", TenantID: "acme", ProjectID: "shop", EnvironmentID: "prod",
			PlanID: "orders", PlanVersion: "v3", CreatedAt: now.Add(-2 * time.Hour)},
		api.Trigger{TriggerID: "github-push", TenantID: "acme", ProjectID: "ci", EnvironmentID: "dev",
			PlanID: "build", PlanVersion: "v1", Input: "{'ref': event.payload.ref}", CreatedAt: now.Add(-time.Minute)})
	b.open("/")
	b.do(chromedp.Click(sel("nav-triggers")), chromedp.WaitVisible(sel("triggers-table")))
	b.waitFor(`document.querySelectorAll('[data-testid="trigger-row"]').length === 2`)
	require.Equal(t, "/triggers", eval[string](b, `location.pathname`))
	require.Equal(t, "Triggers · Weft", eval[string](b, `document.title`))
	require.Equal(t, "page", eval[string](b, `document.querySelector('[data-testid="nav-triggers"]').getAttribute('aria-current')`))

	type row struct{ ID, Plan, Input, Created, Send string }
	got := eval[[]row](b, `[...document.querySelectorAll('[data-testid="trigger-row"]')].map(r => {
		const q = (id) => r.querySelector('[data-testid="' + id + '"]');
		return {ID: r.dataset.triggerId, Plan: q('trigger-plan').textContent, Input: q('trigger-input').textContent,
			Created: q('trigger-created').querySelector('time').getAttribute('datetime'), Send: q('trigger-send').textContent};
	})`)
	require.Equal(t, []row{
		{"github-push", "build@v1", "{'ref': event.payload.ref}", apiTime(now.Add(-time.Minute)), "weft trigger send github-push"},
		{"orders", "orders@v3", "the event’s payload", apiTime(now.Add(-2 * time.Hour)), "weft trigger send orders"},
	}, got)
	require.Equal(t, "2 triggers", eval[string](b, `document.querySelector('[data-testid="triggers-summary"]').textContent`))
	b.console.RequireNoErrors(t)
}

// Under each trigger, the Triggers page shows its last five events: each
// event's id (its run's request id after "{triggerId}:"), the run it
// started, linked, with its status; and a link to all its runs, the runs
// list filtered by trigger (issue #19, item 13). A trigger whose id only
// starts the same has its own events; one without events says so.
func TestTriggersShowLastEvents(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	statuses := []events.RunStatus{events.RunStatusRunning, events.RunStatusFailed, events.RunStatusCompleted}
	var runs []api.RunView // newest first
	requests := map[string]string{}
	for i := range 7 {
		v := simpleRun(runID(i+1), statuses[i%3], now)
		v.CreatedAt = now.Add(-time.Duration(i) * time.Minute)
		runs = append(runs, v)
		requests[v.RunID] = fmt.Sprintf("orders:evt-%d", 7-i)
	}
	requests[runs[0].RunID] = "orders:evt:with:colons"
	eu := simpleRun(runID(20), events.RunStatusCompleted, now)
	plain := simpleRun(runID(21), events.RunStatusCompleted, now)
	runs = append([]api.RunView{eu, plain}, runs...)
	requests[eu.RunID] = "orders-eu:e1"
	requests[plain.RunID] = "adhoc"
	b := setup(t, runs...)
	b.api.setRequestIDs(requests)
	b.api.setTriggers(
		api.Trigger{TriggerID: "orders", TenantID: "default", PlanID: "hello", PlanVersion: "v1", CreatedAt: now.Add(-time.Hour)},
		api.Trigger{TriggerID: "orders-eu", TenantID: "default", PlanID: "hello", PlanVersion: "v1", CreatedAt: now.Add(-time.Hour)},
		api.Trigger{TriggerID: "quiet", TenantID: "default", PlanID: "hello", PlanVersion: "v1", CreatedAt: now.Add(-time.Hour)})

	b.open("/triggers")
	b.waitFor(`document.querySelectorAll('[data-trigger-id="orders"] [data-testid="trigger-event"]').length === 5`)
	type event struct{ ID, Href, Status string }
	shown := func(trigger string) []event {
		return eval[[]event](b, `[...document.querySelectorAll('[data-trigger-id=`+js(trigger)+`] [data-testid="trigger-event"]')].map(e => ({
			ID: e.dataset.eventId, Href: e.querySelector('[data-testid="trigger-event-run"]').getAttribute('href'),
			Status: e.querySelector('[data-testid="trigger-event-status"]').textContent}))`)
	}
	want := []event{{"evt:with:colons", "/runs/" + runs[2].RunID, "RUNNING"}}
	for i, v := range runs[3:7] {
		want = append(want, event{fmt.Sprintf("evt-%d", 6-i), "/runs/" + v.RunID, string(v.Status)})
	}
	require.Equal(t, want, shown("orders"))
	b.waitFor(`document.querySelectorAll('[data-trigger-id="orders-eu"] [data-testid="trigger-event"]').length === 1`)
	require.Equal(t, []event{{"e1", "/runs/" + eu.RunID, "COMPLETED"}}, shown("orders-eu"))
	b.waitFor(`!!document.querySelector('[data-trigger-id="quiet"] [data-testid="trigger-events-none"]')`)
	i := slices.IndexFunc(b.api.listCalls(), func(q url.Values) bool { return q.Get("trigger") == "orders" })
	require.GreaterOrEqual(t, i, 0, "the page asked for the runs of trigger orders")
	require.Equal(t, "5", b.api.listCalls()[i].Get("limit"))

	b.do(chromedp.Click(`[data-trigger-id="orders"] [data-testid="trigger-runs-link"]`))
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === 7`)
	require.Equal(t, "/?trigger=orders", eval[string](b, `location.pathname + location.search`))
	require.Equal(t, "trigger orders", eval[string](b, `document.querySelector('[data-testid="filter-trigger"]').textContent`))
	require.Equal(t, "7 runs matching", eval[string](b, `document.querySelector('[data-testid="runs-summary"]').textContent`))
	b.do(chromedp.Click(sel("filter-clear")))
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === 9`)
	require.Equal(t, "/", eval[string](b, `location.pathname + location.search`))
	require.True(t, eval[bool](b, `document.querySelector('[data-testid="filter-trigger"]').hidden`))

	b.do(chromedp.Click(sel("nav-triggers")))
	b.waitFor(`document.querySelectorAll('[data-trigger-id="orders"] [data-testid="trigger-event"]').length === 5`)
	b.do(chromedp.Click(`[data-trigger-id="orders"] [data-testid="trigger-event-run"]`))
	b.waitFor(`location.pathname === ` + js("/runs/"+runs[2].RunID))
	b.console.RequireNoErrors(t)
}

// A trigger that refused events shows how many, and the last ones with
// their reasons; one that refused none shows nothing of the kind.
func TestTriggersShowRefusedEvents(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	b := setup(t)
	b.api.setTriggers(
		api.Trigger{TriggerID: "typed", TenantID: "acme", ProjectID: "shop", EnvironmentID: "prod", PlanID: "typed", PlanVersion: "1",
			CreatedAt: now.Add(-time.Hour), RefusedEvents: 7, RecentRefusals: []api.RefusedEvent{
				{EventID: "e7", Code: api.CodeInvalidArgument, Message: "input.total minimum: got -1, want 0", At: now.Add(-time.Minute)},
				{EventID: "e6", Code: api.CodePlanArchived, Message: "typed@1 is archived", At: now.Add(-2 * time.Minute)}}},
		api.Trigger{TriggerID: "clean", TenantID: "acme", PlanID: "x", PlanVersion: "1", CreatedAt: now.Add(-time.Hour)})
	b.open("/triggers")
	b.waitFor(`document.querySelectorAll('[data-testid="trigger-row"]').length === 2`)
	require.Equal(t, 1, eval[int](b, `document.querySelectorAll('[data-testid="trigger-refusals"]').length`))
	require.Equal(t, "7 refused events", eval[string](b, `document.querySelector('[data-trigger-id="typed"] [data-testid="trigger-refusals"] summary').textContent`))
	type refusal struct{ ID, Text string }
	got := eval[[]refusal](b, `[...document.querySelectorAll('[data-testid="trigger-refusal"]')].map(li => ({ID: li.dataset.eventId, Text: li.textContent}))`)
	require.Len(t, got, 2)
	require.Equal(t, "e7", got[0].ID)
	require.Contains(t, got[0].Text, "InvalidArgument: input.total minimum")
	require.Contains(t, got[1].Text, "PlanArchived")
	b.console.RequireNoErrors(t)
}
