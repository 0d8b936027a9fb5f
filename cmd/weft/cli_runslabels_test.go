package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/cli"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// labelPlan is a one-step plan of the label tests, of version version.
func labelPlan(version string) string {
	return "planId: labeled\nplanVersion: \"" + version + "\"\nsteps:\n  - id: a\n    activity: echo\n"
}

// `weft run start --label` starts a run with its labels, which `weft run
// get` and `weft runs ls` show; `weft runs ls` filters by label (ANDed),
// several statuses, plan version and creation and end times, and its
// next-page command keeps the filters; a bad label is refused before
// anything is sent.
func TestCLIRunLabelsAndFilters(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t)
	v1, v2 := writePlan(t, labelPlan("1")), writePlan(t, labelPlan("2"))
	start := func(file string, labels ...string) *api.RunView {
		args := []string{"run", "start", "-f", file, "--wait", "-o", "json"}
		for _, l := range labels {
			args = append(args, "--label", l)
		}
		r := s.weft(t, args...)
		require.Equal(t, cli.ExitOK, r.code, "err: %v\nstderr: %s", r.err, r.errOut)
		v := decode[api.RunView](t, r)
		return s.waitFor(t, v.RunID, "the read API has it ended", func(v *api.RunView) bool { return v.Status == events.RunStatusCompleted })
	}
	a := start(v1, "team=data", "env=prod")
	b := start(v2, "team=data", "env=dev")
	c := start(v1, "team=web")
	require.Equal(t, map[string]string{"team": "data", "env": "prod"}, a.Labels)

	get := s.weft(t, "run", "get", a.RunID)
	require.NoError(t, get.err, get.errOut)
	require.Contains(t, rowOf(get.out, "Labels"), "env=prod,team=data")
	ls := s.weft(t, "runs", "ls")
	require.NoError(t, ls.err, ls.errOut)
	require.Contains(t, rowOf(ls.out, a.RunID), "env=prod,team=data")
	require.Contains(t, rowOf(ls.out, c.RunID), "team=web")

	ids := func(args ...string) []string {
		t.Helper()
		list := decode[api.RunList](t, s.weft(t, append(append([]string{"runs", "ls"}, args...), "-o", "json")...))
		out := []string{}
		for _, r := range list.Runs {
			out = append(out, r.RunID)
		}
		return out
	}
	require.Equal(t, []string{b.RunID, a.RunID}, ids("--label", "team=data"))
	require.Equal(t, []string{a.RunID}, ids("--label", "team=data", "--label", "env=prod"))
	require.Equal(t, []string{c.RunID, a.RunID}, ids("--plan", "labeled", "--plan-version", "1"))
	require.Equal(t, []string{c.RunID, b.RunID, a.RunID}, ids("--status", "COMPLETED,FAILED"))
	require.Empty(t, ids("--status", "FAILED,CANCELLED"))
	at := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	require.Equal(t, []string{c.RunID, b.RunID}, ids("--created-after", at(b.CreatedAt)))
	require.Equal(t, []string{a.RunID}, ids("--created-before", at(b.CreatedAt)))
	require.Equal(t, []string{b.RunID}, ids("--ended-after", at(*b.CompletedAt), "--ended-before", at(*c.CompletedAt)))

	page := s.weft(t, "runs", "ls", "--label", "team=data", "--plan", "labeled", "--limit", "1")
	require.NoError(t, page.err, page.errOut)
	require.Contains(t, page.out, "More: weft runs ls --plan labeled --label team=data --limit 1 --cursor ")

	bad := s.weft(t, "run", "start", "-f", v1, "--label", "Team=x")
	require.Equal(t, cli.ExitError, bad.code, "err: %v", bad.err)
	require.ErrorContains(t, bad.err, `label "Team=x"`)
	bad = s.weft(t, "runs", "ls", "--created-after", "yesterday")
	require.Equal(t, cli.ExitError, bad.code, "err: %v", bad.err)
	require.ErrorContains(t, bad.err, "RFC 3339")
	bad = s.weft(t, "runs", "ls", "--plan-version", "1")
	require.Equal(t, cli.ExitError, bad.code, "err: %v", bad.err)
	require.ErrorContains(t, bad.err, "planVersion")
}
