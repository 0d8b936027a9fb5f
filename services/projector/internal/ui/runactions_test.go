package ui_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// offered is what the run page offers a run: its run-level buttons that
// are enabled, the steps with a Retry step button, the steps with a Send
// signal button.
type offered struct {
	Enabled []string
	Retry   []string
	Signal  []string
}

// TestRunActionsOnlyThoseThatTakeEffect: the run page offers a signal only
// when it can take effect, as docs/api.md ("Signals that can have no
// effect") and the engine's verdicts say: PAUSE a RUNNING run, RESUME a
// PAUSED one, CANCEL one that has not ended (but a PENDING one, which the
// engine ignores), RETRY_STEP a failed step of a FAILED run or of one
// that runs; a waitSignal step's signal while the run has started and not
// ended. A failed step of a COMPLETED run (a handled failure) offers no
// retry, which the gateway would refuse with RunTerminal.
func TestRunActionsOnlyThoseThatTakeEffect(t *testing.T) {
	t.Parallel()
	now := time.Now()
	want := map[events.RunStatus]offered{
		events.RunStatusPending:   {Enabled: []string{}, Retry: []string{}, Signal: []string{}},
		events.RunStatusApproved:  {Enabled: []string{"cancel"}, Retry: []string{}, Signal: []string{}},
		events.RunStatusQueued:    {Enabled: []string{"cancel"}, Retry: []string{}, Signal: []string{}},
		events.RunStatusRunning:   {Enabled: []string{"pause", "cancel"}, Retry: []string{"transform"}, Signal: []string{"approve"}},
		events.RunStatusPaused:    {Enabled: []string{"resume", "cancel"}, Retry: []string{"transform"}, Signal: []string{"approve"}},
		events.RunStatusFailed:    {Enabled: []string{}, Retry: []string{"transform"}, Signal: []string{}},
		events.RunStatusCompleted: {Enabled: []string{}, Retry: []string{}, Signal: []string{}},
		events.RunStatusCancelled: {Enabled: []string{}, Retry: []string{}, Signal: []string{}},
	}
	var runs []api.RunView
	ids := map[events.RunStatus]string{}
	i := 0
	for status := range want {
		i++
		v, _ := richRun(now) // transform FAILED, approve RUNNING (waitSignal)
		v.RunID, v.Status = runID(300+i), status
		ids[status] = v.RunID
		runs = append(runs, v)
	}
	b := setup(t, runs...)
	for status, w := range want {
		b.open("/runs/" + ids[status])
		b.waitFor(`document.querySelector('[data-testid="run-status"]')?.textContent === ` + js(string(status)) +
			` && document.querySelectorAll('[data-testid="step"]').length === 7`)
		got := eval[offered](b, `({
			Enabled: ['pause', 'resume', 'cancel'].filter(n => !document.querySelector('[data-testid="btn-' + n + '"]').disabled),
			Retry: [...document.querySelectorAll('[data-testid="btn-retry-step"]')].map(b => b.dataset.stepId),
			Signal: [...document.querySelectorAll('[data-testid="btn-signal"]')].map(b => b.dataset.stepId),
		})`)
		assert.Equal(t, w, got, "run %s", status)
	}
	b.console.RequireNoErrors(t)
}

// TestQueuedRun: a QUEUED run has its badge, is in the list's status
// filter, and its page says why it waits (the snapshot's queued.reason)
// and offers only CANCEL.
func TestQueuedRun(t *testing.T) {
	t.Parallel()
	now := time.Now()
	queued := simpleRun(runID(401), events.RunStatusApproved, now)
	const reason = "2 of 2 running in environment cust-1 " + xss
	queued.Status = events.RunStatusQueued
	queued.Queued = &events.QueueHold{Reason: reason, Since: now.Add(-3 * time.Minute)}
	done := simpleRun(runID(402), events.RunStatusCompleted, now.Add(-time.Minute))
	b := setup(t, queued, done)

	b.open("/")
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === 2`)
	require.Contains(t, eval[[]string](b, `[...document.querySelectorAll('[data-testid="filter-status"] option')].map(o => o.value)`), "QUEUED")
	b.do(chromedp.Evaluate[chromedp.Void](`(s => { s.value = 'QUEUED'; s.dispatchEvent(new Event('change')); })(document.querySelector('[data-testid="filter-status"]'))`))
	b.waitFor(`document.querySelectorAll('[data-testid="run-row"]').length === 1`)
	require.True(t, hasQuery(b.api.listCalls(), "status", "QUEUED"))
	require.Equal(t, []string{"QUEUED"}, texts(b, "run-status"))
	require.True(t, eval[bool](b, `document.querySelector('[data-testid="run-status"]').classList.contains('pill-queued')`))
	require.Equal(t, eval[string](b, `getComputedStyle(document.querySelector('[data-testid="run-status"]')).backgroundColor`),
		eval[string](b, `(() => { const p = document.createElement('span'); p.className = 'pill pill-approved'; document.body.append(p); const c = getComputedStyle(p).backgroundColor; p.remove(); return c; })()`),
		"QUEUED is styled as APPROVED, not as an unknown status")

	b.open("/runs/" + queued.RunID)
	b.do(chromedp.WaitVisible(sel("run-queued")))
	require.Equal(t, reason, eval[string](b, `document.querySelector('[data-testid="run-queued-reason"]').textContent`))
	require.Contains(t, eval[string](b, `document.querySelector('[data-testid="run-queued"]').textContent`), "since 3m ago")
	require.Equal(t, []string{"cancel"}, eval[[]string](b, `['pause', 'resume', 'cancel'].filter(n => !document.querySelector('[data-testid="btn-' + n + '"]').disabled)`))

	// Once it starts, the notice goes.
	started := simpleRun(queued.RunID, events.RunStatusRunning, now)
	b.api.update(started)
	b.waitFor(`document.querySelector('[data-testid="run-status"]')?.textContent === 'RUNNING'`)
	require.False(t, eval[bool](b, visible(`[data-testid="run-queued"]`)))
	b.console.RequireNoErrors(t)
}
