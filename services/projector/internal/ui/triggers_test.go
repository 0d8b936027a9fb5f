package ui_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
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
