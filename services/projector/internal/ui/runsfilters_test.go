package ui_test

import (
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// labeledRuns are five runs of plan hello, newest first: 1 (v1, RUNNING,
// team=data env=prod), 2 (v2, FAILED, team=data env=dev), 3 (v1,
// COMPLETED, team=web), 4 (v1, RUNNING, no labels) and 5 (v1, FAILED,
// team=data env=prod), created a minute apart.
func labeledRuns(now time.Time) []api.RunView {
	specs := []struct {
		version string
		status  events.RunStatus
		labels  map[string]string
	}{
		{"v1", events.RunStatusRunning, map[string]string{"team": "data", "env": "prod"}},
		{"v2", events.RunStatusFailed, map[string]string{"team": "data", "env": "dev"}},
		{"v1", events.RunStatusCompleted, map[string]string{"team": "web"}},
		{"v1", events.RunStatusRunning, nil},
		{"v1", events.RunStatusFailed, map[string]string{"team": "data", "env": "prod"}},
	}
	runs := make([]api.RunView, len(specs))
	for i, sp := range specs {
		v := simpleRun(runID(i+1), sp.status, now)
		v.PlanVersion, v.Labels = sp.version, sp.labels
		v.CreatedAt = now.Add(-time.Duration(i+1) * time.Minute).Truncate(time.Second)
		runs[i] = v
	}
	return runs
}

// waitRows waits until the list shows exactly the runs ids, in order.
func waitRows(b *bundle, ids ...string) {
	b.t.Helper()
	b.waitFor(`JSON.stringify([...document.querySelectorAll('[data-testid="run-row"]')].map(r => r.dataset.runId)) === ` + js(js(ids)))
}

// lastList is the query of the list's last request.
func lastList(b *bundle) url.Values {
	b.t.Helper()
	calls := b.api.listCalls()
	require.NotEmpty(b.t, calls)
	return calls[len(calls)-1]
}

// The runs list takes its label, several-status, plan version and created
// range filters from the address and sends them to GET /v1/runs; it shows
// each run's labels, and a click on one adds it to the filters, in the
// address too; a label typed in the toolbar is added as a chip, whose
// remove drops it; Clear filters drops them all.
func TestListFiltersByLabelStatusVersionAndTime(t *testing.T) {
	t.Parallel()
	now := time.Now()
	runs := labeledRuns(now)
	b := setup(t, runs...)

	after := runs[3].CreatedAt.UTC().Format(time.RFC3339)
	b.open("/?status=RUNNING,FAILED&label=team=data&plan=hello&planVersion=v1&createdAfter=" + url.QueryEscape(after))
	waitRows(b, runID(1))
	q := lastList(b)
	require.Equal(t, "RUNNING,FAILED", q.Get("status"))
	require.Equal(t, []string{"team=data"}, q["label"])
	require.Equal(t, "hello", q.Get("plan"))
	require.Equal(t, "v1", q.Get("planVersion"))
	require.Equal(t, after, q.Get("createdAfter"))
	require.Equal(t, "RUNNING,FAILED", eval[string](b, `document.querySelector('[data-testid="filter-status"]').value`))
	require.Equal(t, "Running or Failed", eval[string](b, `document.querySelector('[data-testid="filter-status-several"]').textContent`))
	require.Equal(t, "v1", eval[string](b, `document.querySelector('[data-testid="filter-plan-version"]').value`))
	require.Equal(t, []string{"label team=data"}, texts(b, "filter-label-chip"))
	require.NotEmpty(t, eval[string](b, `document.querySelector('[data-testid="filter-created-after"]').value`))

	// Without the created bound, run 5 matches too; without the version, run 2.
	b.do(chromedp.Evaluate[chromedp.Void](`(i => { i.value = ''; i.dispatchEvent(new Event('change')); })(document.querySelector('[data-testid="filter-created-after"]'))`))
	waitRows(b, runID(1), runID(5))
	require.False(t, lastList(b).Has("createdAfter"))
	b.do(chromedp.Evaluate[chromedp.Void](`(i => { i.value = ''; i.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'})); })(document.querySelector('[data-testid="filter-plan-version"]'))`))
	waitRows(b, runID(1), runID(2), runID(5))
	require.Equal(t, "?status=RUNNING%2CFAILED&plan=hello&label=team%3Ddata", eval[string](b, `location.search`))

	// Each row shows its labels; a click on one adds it.
	require.Equal(t, []string{"env=prod", "team=data", "env=dev", "team=data", "env=prod", "team=data"}, texts(b, "run-label"))
	b.do(chromedp.Click(chromedp.CSS(`[data-testid="run-row"][data-run-id="` + runID(2) + `"] [data-testid="run-label"]`)))
	waitRows(b, runID(2))
	require.Equal(t, []string{"team=data", "env=dev"}, lastList(b)["label"])
	require.Contains(t, eval[string](b, `location.search`), "label=env%3Ddev")
	require.Equal(t, "/", eval[string](b, `location.pathname`), "a label's click filters, it does not open the run")

	// A chip's remove drops its label; a typed label is added.
	b.do(chromedp.Click(chromedp.CSS(`[data-testid="filter-label-chip"][data-label="env=dev"] [data-testid="filter-label-chip-remove"]`)))
	waitRows(b, runID(1), runID(2), runID(5))
	b.do(chromedp.SendKeys(sel("filter-label"), "env=prod\r"))
	waitRows(b, runID(1), runID(5))
	require.Equal(t, []string{"team=data", "env=prod"}, lastList(b)["label"])

	// The filters survive a reload, from the address.
	b.do(chromedp.Reload(), chromedp.WaitVisible(sel("run-row")))
	waitRows(b, runID(1), runID(5))
	require.Equal(t, []string{"label team=data", "label env=prod"}, texts(b, "filter-label-chip"))

	b.do(chromedp.Click(sel("filter-clear")))
	waitRows(b, runID(1), runID(2), runID(3), runID(4), runID(5))
	require.Empty(t, eval[string](b, `location.search`))
	require.Empty(t, texts(b, "filter-label-chip"))
	require.False(t, slices.ContainsFunc([]string{"label", "status", "plan"}, lastList(b).Has))
	b.console.RequireNoErrors(t)
}

// The created range's before bound, set in its input, is sent as an RFC
// 3339 time and kept in the address; the ended range and a rerun source,
// from the address alone, show as chips and are sent too.
func TestListCreatedBeforeAndAddressOnlyFilters(t *testing.T) {
	t.Parallel()
	now := time.Now()
	runs := labeledRuns(now)
	b := setup(t, runs...)
	b.open("/")
	waitRows(b, runID(1), runID(2), runID(3), runID(4), runID(5))

	before := runs[2].CreatedAt
	b.do(chromedp.Evaluate[chromedp.Void](`(i => { i.value = ` + js(before.Local().Format("2006-01-02T15:04:05")) + `; i.dispatchEvent(new Event('change')); })(document.querySelector('[data-testid="filter-created-before"]'))`))
	waitRows(b, runID(4), runID(5))
	got, err := time.Parse(time.RFC3339Nano, lastList(b).Get("createdBefore"))
	require.NoError(t, err)
	require.True(t, got.Equal(before), "%s is not %s", got, before)
	require.Contains(t, eval[string](b, `location.search`), "createdBefore=")

	ended := now.Add(-time.Hour).UTC().Format(time.RFC3339)
	b.open("/?rerunOf=" + runID(9) + "&endedAfter=" + url.QueryEscape(ended))
	b.waitFor(`!document.querySelector('[data-testid="filter-rerun-of"]').hidden && !document.querySelector('[data-testid="filter-ended-after"]').hidden`)
	q := lastList(b)
	require.Equal(t, runID(9), q.Get("rerunOf"))
	require.Equal(t, ended, q.Get("endedAfter"))
	b.do(chromedp.Click(sel("filter-rerun-of-remove")))
	b.waitFor(`document.querySelector('[data-testid="filter-rerun-of"]').hidden`)
	require.NotContains(t, eval[string](b, `location.search`), "rerunOf")
	require.Contains(t, eval[string](b, `location.search`), "endedAfter")
	b.console.RequireNoErrors(t)
}
