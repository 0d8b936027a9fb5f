package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/weftest"
)

func progressJob(status string, done, skipped, failed int64, reasons map[string]int) *api.BulkJob {
	return &api.BulkJob{BulkRequest: api.BulkRequest{BulkID: "b1", Action: api.BulkCancel}, Status: status,
		Matched: 8, Done: done, Skipped: skipped, Failed: failed, SkippedReasons: reasons}
}

// Away from a terminal, a bulk job's progress is one line per change,
// with the runs counted out of those matched and the skipped by reason;
// live, one line redrawn in place, cut to the width.
func TestBulkProgress(t *testing.T) {
	t.Parallel()
	var out weftest.Buffer
	p := newBulkProgress(&out, "")
	require.False(t, p.live)
	p.show(progressJob(api.BulkRunning, 0, 0, 0, nil))
	p.show(progressJob(api.BulkRunning, 0, 0, 0, nil))
	p.show(progressJob(api.BulkRunning, 2, 2, 0, map[string]int{"run has ended": 1, "run is no longer in the log": 1}))
	p.show(progressJob(api.BulkDone, 5, 2, 1, map[string]int{"run has ended": 1, "run is no longer in the log": 1}))
	p.finish()
	require.Equal(t, "[--------------------] 0/8 RUNNING  done 0, skipped 0, failed 0\n"+
		"[##########----------] 4/8 RUNNING  done 2, skipped 2 (run has ended: 1, run is no longer in the log: 1), failed 0\n"+
		"[####################] 8/8 DONE  done 5, skipped 2 (run has ended: 1, run is no longer in the log: 1), failed 1\n", out.String())

	var screen weftest.Buffer
	live := &bulkProgress{w: &screen, live: true, width: 30}
	live.show(progressJob(api.BulkRunning, 4, 0, 0, nil))
	live.show(progressJob(api.BulkRunning, 4, 0, 0, nil))
	live.finish()
	require.Equal(t, "\r[##########----------] 4/8 R…\x1b[K\r[##########----------] 4/8 R…\x1b[K\n", screen.String())
}

// A followed job exits 0 when DONE with no run failed, ExitFailed when
// some failed, ExitCancelled when it was cancelled.
func TestBulkOutcome(t *testing.T) {
	t.Parallel()
	require.NoError(t, bulkOutcome(progressJob(api.BulkDone, 6, 2, 0, nil)))
	require.Equal(t, ExitFailed, ExitCode(bulkOutcome(progressJob(api.BulkDone, 6, 1, 1, nil))))
	require.Equal(t, ExitCancelled, ExitCode(bulkOutcome(progressJob(api.BulkCancelled, 2, 0, 1, nil))))
}

// A filter with no field is refused unless yes; so is a plan version
// without its plan. filterText says a filter as its flags.
func TestBulkFilter(t *testing.T) {
	t.Parallel()
	require.ErrorContains(t, checkBulkFilter(api.BulkFilter{}, false, "s"), "no filter")
	require.NoError(t, checkBulkFilter(api.BulkFilter{}, true, "s"))
	require.NoError(t, checkBulkFilter(api.BulkFilter{Parent: "r"}, false, "s"))
	require.ErrorContains(t, checkBulkFilter(api.BulkFilter{PlanVersion: "1"}, true, "s"), "--plan-version needs --plan")
	require.Equal(t, "(none: every run)", filterText(api.BulkFilter{}))
	require.Equal(t, "--status RUNNING,PAUSED --plan p --label env=dev --label team=a",
		filterText(api.BulkFilter{Status: []string{"RUNNING", "PAUSED"}, PlanID: "p", Labels: map[string]string{"team": "a", "env": "dev"}}))
}
