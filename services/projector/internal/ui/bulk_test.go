package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
)

// selectRuns ticks the checkboxes of the runs ids.
func selectRuns(b *bundle, ids ...string) {
	b.t.Helper()
	for _, id := range ids {
		b.do(chromedp.Click(chromedp.CSS(`[data-testid="bulk-select"][data-run-id="` + id + `"]`)))
	}
}

// bulkAct clicks the action bar's button of action (api.Bulk*).
func bulkAct(b *bundle, action string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS(`[data-testid="bulk-action"][data-action="` + action + `"]`)))
}

// waitResult waits until the selection's result reports the counts.
func waitResult(b *bundle, done, skipped, failed int) string {
	b.t.Helper()
	b.waitFor(fmt.Sprintf(`(d => d.done === '%d' && d.skipped === '%d' && d.failed === '%d')(document.querySelector('[data-testid="bulk-selection-result"]').dataset)`,
		done, skipped, failed))
	return eval[string](b, `document.querySelector('[data-testid="bulk-selection-result"]').textContent`)
}

// confirmYes waits for the confirm dialog, returns its title and text,
// and answers yes.
func confirmYes(b *bundle) (title, text string) {
	b.t.Helper()
	b.waitFor(`document.querySelector('[data-testid="confirm-dialog"]').open`)
	title = eval[string](b, `document.getElementById('confirm-title').textContent`)
	text = eval[string](b, `document.getElementById('confirm-text').textContent`)
	b.do(chromedp.Click(sel("confirm-ok")))
	return title, text
}

// sent is a signal the fake saw: its run, name, signalId and payload.
type sent struct{ Run, Name, ID, Payload string }

func sentSignals(t *testing.T, b *bundle, from int) []sent {
	t.Helper()
	var out []sent
	for _, c := range b.api.signalCalls()[from:] {
		name, id, payload, _ := signalBody(t, c)
		out = append(out, sent{c.RunID, name, id, string(payload)})
	}
	return out
}

// A selection's action sends one signal per run it can take effect on,
// through the run page's path, and skips the others with why; a click
// again after a refusal sends the same signalIds, so the gateway
// deduplicates what reached it. Retry failed steps signals each FAILED
// step once, Rerun failed reruns from the first one, and Cancel asks
// first. A click on a checkbox does not open the run.
func TestBulkSelectionSignalsEachRunOnce(t *testing.T) {
	t.Parallel()
	runs := labeledRuns(time.Now()) // 1 RUNNING, 2 FAILED, 3 COMPLETED, 4 RUNNING, 5 FAILED
	b := setup(t, runs...)
	b.open("/")
	waitRows(b, runID(1), runID(2), runID(3), runID(4), runID(5))
	b.waitFor(`document.querySelectorAll('[data-testid="bulk-select"]').length === 5`)

	b.api.setSignalError(&apiError{http.StatusServiceUnavailable, "Unavailable", "the gateway is draining"})
	selectRuns(b, runID(1), runID(3), runID(4))
	require.Equal(t, "3 selected", eval[string](b, `document.querySelector('[data-testid="bulk-selection-count"]').textContent`))
	require.Equal(t, "/", eval[string](b, `location.pathname`), "a checkbox selects; it does not open the run")
	bulkAct(b, api.BulkPause)
	waitResult(b, 0, 1, 2)
	require.Equal(t, "Unavailable: the gateway is draining", eval[string](b, `document.querySelector('[data-testid="bulk-error"]').textContent`))
	require.Equal(t, "3 selected", eval[string](b, `document.querySelector('[data-testid="bulk-selection-count"]').textContent`), "a failed action keeps the selection")
	failedIDs := sentSignals(t, b, 0)

	b.api.setSignalError(nil)
	bulkAct(b, api.BulkPause)
	require.Equal(t, "Pause: 2 done, 1 skipped (1 Only a running run can be paused), 0 failed", waitResult(b, 2, 1, 0))
	got := sentSignals(t, b, 0)
	require.Len(t, got, 4)
	base := got[0].ID
	require.Equal(t, []sent{
		{runID(1), "PAUSE", base, ""}, {runID(4), "PAUSE", base, ""},
		{runID(1), "PAUSE", base, ""}, {runID(4), "PAUSE", base, ""},
	}, got, "one signal per run and click, the same signalId on the click again")
	require.Equal(t, failedIDs, got[:2])
	require.Equal(t, "0 selected", eval[string](b, `document.querySelector('[data-testid="bulk-selection-count"]').textContent`))
	require.False(t, eval[bool](b, `[...document.querySelectorAll('[data-testid="bulk-select"]')].some(c => c.checked)`))
	require.True(t, eval[bool](b, `document.querySelector('[data-testid="bulk-error"]').hidden`))

	// Select all, Retry failed steps: a RETRY_STEP of each FAILED run's failed step, with a new id.
	b.do(chromedp.Click(sel("bulk-select-all")))
	require.Equal(t, "5 selected", eval[string](b, `document.querySelector('[data-testid="bulk-selection-count"]').textContent`))
	bulkAct(b, api.BulkRetryFailedSteps)
	waitResult(b, 2, 3, 0)
	retry := sentSignals(t, b, 4)
	require.Len(t, retry, 2)
	rbase := strings.TrimSuffix(retry[0].ID, "-shout")
	require.NotEqual(t, base, rbase, "each click has an id of its own")
	require.Equal(t, []sent{
		{runID(2), "RETRY_STEP", rbase + "-shout", `{"stepId":"shout"}`}, {runID(5), "RETRY_STEP", rbase + "-shout", `{"stepId":"shout"}`},
	}, retry)

	// Rerun failed on run 2: a rerun from its first failed step.
	selectRuns(b, runID(2))
	bulkAct(b, api.BulkRerun)
	waitResult(b, 1, 0, 0)
	reruns := b.api.rerunCalls()
	require.Len(t, reruns, 1)
	require.Equal(t, runID(2), reruns[0].RunID)
	var rerun api.RerunRequest
	raw, err := json.Marshal(reruns[0].Body)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &rerun))
	require.Equal(t, "shout", rerun.FromStepID)
	require.Regexp(t, `^[0-9a-f-]{36}-`+regexp.QuoteMeta(runID(2))+`$`, rerun.RunRequestID)

	// Cancel asks first, then signals the runs that have not ended.
	b.do(chromedp.Click(sel("bulk-select-all")))
	bulkAct(b, api.BulkCancel)
	title, _ := confirmYes(b)
	require.Equal(t, "Cancel 5 runs?", title)
	waitResult(b, 2, 3, 0)
	cancel := sentSignals(t, b, 6)
	require.Equal(t, []string{runID(1), runID(4)}, []string{cancel[0].Run, cancel[1].Run})
	require.Len(t, cancel, 2)
	require.Equal(t, "CANCEL", cancel[0].Name)
}

// "Act on all matching" starts a bulk job with the list's filters as its
// filter, after a confirmation naming the action and the filter, and
// follows its progress to DONE, skipped runs counted by reason; a refusal
// shows the gateway's message, and the click again reuses its bulkId.
// "Cancel job" cancels a running job. Filters a job cannot express offer
// no job, and a list without a filter offers none.
func TestBulkActOnAllMatching(t *testing.T) {
	t.Parallel()
	runs := labeledRuns(time.Now())
	b := setup(t, runs...)
	b.open("/")
	waitRows(b, runID(1), runID(2), runID(3), runID(4), runID(5))
	b.waitFor(`document.querySelector('[data-testid="bulk-bar"]').dataset.allowed === 'true'`)
	require.False(t, eval[bool](b, visible(`[data-testid="bulk-all"]`)), "no filter, no job over every run")

	b.open("/?plan=hello&createdAfter=" + runs[3].CreatedAt.UTC().Format(time.RFC3339))
	waitRows(b, runID(1), runID(2), runID(3), runID(4))
	b.waitFor(visible(`[data-testid="bulk-all-unavailable"]`))
	require.Contains(t, eval[string](b, `document.querySelector('[data-testid="bulk-all-unavailable"]').textContent`), "created after")
	require.False(t, eval[bool](b, visible(`[data-testid="bulk-all"]`)))

	b.open("/?plan=hello&label=team=data")
	waitRows(b, runID(1), runID(2), runID(5))
	b.waitFor(visible(`[data-testid="bulk-all"]`))
	require.Equal(t, "Act on all 3 matching", eval[string](b, `document.querySelector('[data-testid="bulk-all"]').textContent`))
	b.api.refuseNextBulk(apiError{http.StatusBadRequest, "InvalidArgument", "filter matches more than 100000 runs"})
	b.do(chromedp.SetValue(sel("bulk-all-action"), api.BulkPause), chromedp.Click(sel("bulk-all")))
	title, text := confirmYes(b)
	require.Equal(t, "Pause: all 3 matching runs?", title)
	require.Contains(t, text, "PAUSE on every run matching plan hello, label team=data")
	b.waitFor(visible(`[data-testid="bulk-error"]`))
	require.Equal(t, "InvalidArgument: filter matches more than 100000 runs", eval[string](b, `document.querySelector('[data-testid="bulk-error"]').textContent`))

	b.do(chromedp.Click(sel("bulk-all")))
	confirmYes(b)
	b.waitFor(`document.querySelector('[data-testid="bulk-job"]')?.dataset.status === 'DONE'`)
	reqs := b.api.bulkRequests()
	require.Len(t, reqs, 2)
	require.Equal(t, reqs[0], reqs[1], "the click again reuses the refused start's bulkId")
	require.Equal(t, api.BulkRequest{BulkID: reqs[0].BulkID, Action: api.BulkPause,
		Filter: api.BulkFilter{PlanID: "hello", Labels: map[string]string{"team": "data"}}}, reqs[0])
	type progress struct{ Matched, Done, Skipped, Failed string }
	readProgress := `(t => ({Matched: t('matched'), Done: t('done'), Skipped: t('skipped'), Failed: t('failed')}))(n => document.querySelector('[data-testid="bulk-job-' + n + '"]').textContent)`
	require.Equal(t, progress{"3", "1", "2", "0"}, eval[progress](b, readProgress))
	require.Equal(t, []string{"2 skipped: run is not RUNNING"}, texts(b, "bulk-job-reason"))
	require.GreaterOrEqual(t, b.api.bulkPolls(reqs[0].BulkID), 3, "each poll advanced the job one run")
	require.False(t, eval[bool](b, visible(`[data-testid="bulk-job-cancel"]`)), "an ended job cannot be cancelled")
	require.True(t, eval[bool](b, visible(`[data-testid="bulk-job-close"]`)))

	// A job held running is cancelled with "Cancel job".
	b.api.setBulkHold(true)
	b.open("/?status=RUNNING&plan=hello&planVersion=v1")
	waitRows(b, runID(1), runID(4))
	b.waitFor(visible(`[data-testid="bulk-all"]`))
	b.do(chromedp.SetValue(sel("bulk-all-action"), api.BulkCancel), chromedp.Click(sel("bulk-all")))
	title, text = confirmYes(b)
	require.Equal(t, "Cancel: all 2 matching runs?", title)
	require.Contains(t, text, "CANCEL on every run matching status RUNNING, plan hello@v1")
	b.waitFor(`document.querySelector('[data-testid="bulk-job"]')?.dataset.status === 'RUNNING'`)
	reqs = b.api.bulkRequests()
	require.Len(t, reqs, 3)
	job := reqs[2]
	require.Equal(t, api.BulkFilter{Status: []string{"RUNNING"}, PlanID: "hello", PlanVersion: "v1"}, job.Filter)
	require.NotEqual(t, reqs[0].BulkID, job.BulkID)
	b.waitFor(`document.querySelector('[data-testid="bulk-job"]').dataset.bulkId === ` + js(job.BulkID))
	b.do(chromedp.Click(sel("bulk-job-cancel")))
	b.waitFor(`document.querySelector('[data-testid="bulk-job"]').dataset.status === 'CANCELLED'`)
	require.Equal(t, []string{job.BulkID}, b.api.bulkCancels())
	require.Equal(t, "0", eval[string](b, `document.querySelector('[data-testid="bulk-job-done"]').textContent`))
}

// A viewer's key (no signal.send) gets no checkboxes and no actions.
func TestBulkViewerSeesNoActions(t *testing.T) {
	t.Parallel()
	b := setup(t, labeledRuns(time.Now())...)
	b.do(chromedp.Navigate(b.url + "/?plan=hello#token=" + viewerToken))
	waitRows(b, runID(1), runID(2), runID(3), runID(4), runID(5))
	b.waitFor(`document.querySelector('[data-testid="bulk-bar"]').dataset.allowed === 'false'`)
	require.Zero(t, eval[int](b, `document.querySelectorAll('[data-testid="bulk-select"]').length`))
	require.False(t, eval[bool](b, visible(`[data-testid="bulk-bar"]`)))
	require.False(t, eval[bool](b, visible(`[data-testid="bulk-select-all"]`)))
	require.False(t, eval[bool](b, visible(`.runs-table td.cell-select`)))
	b.console.RequireNoErrors(t)
}
