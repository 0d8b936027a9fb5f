package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/cli"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// waitingPlan is a plan whose run waits for signal go: it stays RUNNING.
const waitingPlan = "planId: waits\nplanVersion: \"1\"\nsteps:\n  - id: w\n    kind: waitSignal\n    signal: go\n"

// startWaiting starts a run of waitingPlan with labels and waits until
// the read API has it RUNNING.
func (s *cliStack) startWaiting(t *testing.T, file string, labels ...string) string {
	t.Helper()
	args := []string{"run", "start", "-f", file, "-o", "json"}
	for _, l := range labels {
		args = append(args, "--label", l)
	}
	r := s.weft(t, args...)
	require.Equal(t, cli.ExitOK, r.code, "err: %v\nstderr: %s", r.err, r.errOut)
	id := decode[api.StartRunResult](t, r).RunID
	s.waitFor(t, id, "the run waits for its signal", func(v *api.RunView) bool { return stepStatus(v, "w") == events.StepStatusRunning })
	return id
}

// `weft runs cancel --label` starts a bulk job, prints its id, follows it
// to DONE with its progress as plain lines on stderr, and cancels the
// matched runs only; the same --bulk-id again finds the job; `weft runs
// pause` on the cancelled runs skips each with its reason; `weft bulk get`
// and `weft bulk cancel` show a job; a filter with no field is refused
// unless --yes, and nothing is started.
func TestCLIBulk(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t)
	file := writePlan(t, waitingPlan)
	matched := []string{s.startWaiting(t, file, "team=bulk"), s.startWaiting(t, file, "team=bulk", "env=dev")}
	other := s.startWaiting(t, file, "team=web")

	r := s.weft(t, "runs", "cancel", "--label", "team=bulk", "--bulk-id", "cli-1")
	require.Equal(t, cli.ExitOK, r.code, "err: %v\nstderr: %s", r.err, r.errOut)
	require.Contains(t, r.out, "Started bulk job cli-1: CANCEL on 2 matching runs.\nFollow it: weft bulk get cli-1\n")
	require.Contains(t, rowOf(r.out, "Status"), "DONE")
	require.Contains(t, rowOf(r.out, "Done"), "2")
	require.Contains(t, rowOf(r.out, "Filter"), "--label team=bulk")
	require.NotContains(t, r.errOut, "\r", "away from a terminal, progress is plain lines")
	require.Contains(t, r.errOut, "[####################] 2/2 DONE  done 2, skipped 0, failed 0\n")
	for _, id := range matched {
		s.waitFor(t, id, "the run is cancelled", func(v *api.RunView) bool { return v.Status == events.RunStatusCancelled })
	}
	v, err := s.client.GetRun(t.Context(), other)
	require.NoError(t, err)
	require.Equal(t, events.RunStatusRunning, v.Status, "a run the filter does not match is left alone")

	again := s.weft(t, "runs", "cancel", "--label", "team=bulk", "--bulk-id", "cli-1", "-o", "json")
	require.Equal(t, cli.ExitOK, again.code, "err: %v\nstderr: %s", again.err, again.errOut)
	require.Contains(t, again.errOut, "Found the earlier bulk job cli-1")
	job := decode[api.BulkJob](t, again)
	require.Equal(t, api.BulkDone, job.Status)
	require.Equal(t, int64(2), job.Done)

	pause := s.weft(t, "runs", "pause", "--label", "team=bulk", "--status", "cancelled", "-o", "json")
	require.Equal(t, cli.ExitOK, pause.code, "err: %v\nstderr: %s", pause.err, pause.errOut)
	job = decode[api.BulkJob](t, pause)
	require.Equal(t, api.BulkPause, job.Action)
	require.Equal(t, []string{"CANCELLED"}, job.Filter.Status)
	require.Equal(t, [4]int64{2, 0, 2, 0}, [4]int64{job.Matched, job.Done, job.Skipped, job.Failed})
	require.Equal(t, map[string]int{"run is not RUNNING": 2}, job.SkippedReasons)
	require.NotEmpty(t, job.BulkID, "a fresh bulk id")

	get := s.weft(t, "bulk", "get", job.BulkID)
	require.NoError(t, get.err, get.errOut)
	require.Contains(t, rowOf(get.out, "Skipped"), "2 (run is not RUNNING: 2)")
	cancel := s.weft(t, "bulk", "cancel", "cli-1", "-o", "json")
	require.NoError(t, cancel.err, cancel.errOut)
	require.Equal(t, api.BulkDone, decode[api.BulkJob](t, cancel).Status, "cancelling a job that has ended changes nothing")
	missing := s.weft(t, "bulk", "get", "nope")
	require.Equal(t, cli.ExitError, missing.code)
	require.ErrorContains(t, missing.err, `no bulk job "nope"`)

	bad := s.weft(t, "runs", "resume")
	require.Equal(t, cli.ExitError, bad.code)
	require.ErrorContains(t, bad.err, "no filter: this would act on every run of the tenant")
	bad = s.weft(t, "runs", "cancel", "--plan-version", "1")
	require.Equal(t, cli.ExitError, bad.code)
	require.ErrorContains(t, bad.err, "--plan-version needs --plan")
	bad = s.weft(t, "runs", "cancel", "--status", "DONE", "--no-wait")
	require.Equal(t, cli.ExitError, bad.code)
	require.ErrorContains(t, bad.err, `unknown status "DONE"`)
	v, err = s.client.GetRun(t.Context(), other)
	require.NoError(t, err)
	require.Equal(t, events.RunStatusRunning, v.Status, "a refused command acts on no run")

	all := s.weft(t, "runs", "cancel", "--yes", "--no-wait", "-o", "json")
	require.Equal(t, cli.ExitOK, all.code, "err: %v\nstderr: %s", all.err, all.errOut)
	job = decode[api.BulkJob](t, all)
	require.Equal(t, int64(3), job.Matched, "--yes: every run of the tenant")
	require.Empty(t, all.errOut, "--no-wait follows nothing")
	s.waitFor(t, other, "the last run is cancelled", func(v *api.RunView) bool { return v.Status == events.RunStatusCancelled })
	require.True(t, strings.HasPrefix(s.weft(t, "bulk", "get", job.BulkID).out, "Bulk job  "+job.BulkID))
}
