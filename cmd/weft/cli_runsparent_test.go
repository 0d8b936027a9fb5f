package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/cli"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// familyPlan has two subPlan steps, each of which starts a child run of
// an inline plan.
const familyPlan = `planId: family
planVersion: "1"
steps:
  - id: pay
    kind: subPlan
    input: {amount: 5}
    plan: {planId: charge-inline, planVersion: "1", steps: [{id: work, activity: echo}]}
  - id: ship
    kind: subPlan
    dependsOn: [pay]
    plan: {planId: ship-inline, planVersion: "1", steps: [{id: work, activity: echo}]}
`

// `weft runs ls --parent RUN_ID` lists a run's child runs, in pages, each
// naming its parent; `weft run get` shows a child's parent and each
// subPlan step's child run; a parent that is not a run id is refused.
func TestCLIRunsOfAParent(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t)
	file := filepath.Join(t.TempDir(), "family.yaml")
	require.NoError(t, os.WriteFile(file, []byte(familyPlan), 0o600))
	r := s.weft(t, "run", "start", "-f", file, "--wait", "-o", "json")
	require.Equal(t, cli.ExitOK, r.code, "err: %v\nstderr: %s", r.err, r.errOut)
	parent := decode[api.RunView](t, r)
	kids := map[string]string{} // step id: child run id
	for _, st := range parent.Steps {
		kids[st.StepID] = st.ChildRunID
	}
	require.NotEmpty(t, kids["pay"])
	require.NotEmpty(t, kids["ship"])
	s.waitFor(t, kids["ship"], "the read API has ship's child", func(v *api.RunView) bool { return v.Status == events.RunStatusCompleted })

	list := decode[api.RunList](t, s.weft(t, "runs", "ls", "--parent", parent.RunID, "-o", "json"))
	require.Equal(t, []string{kids["ship"], kids["pay"]}, []string{list.Runs[0].RunID, list.Runs[1].RunID}, "newest first")
	require.Len(t, list.Runs, 2)
	for _, c := range list.Runs {
		require.Equal(t, parent.RunID, c.ParentRunID)
	}
	page := s.weft(t, "runs", "ls", "--parent", parent.RunID, "--limit", "1")
	require.NoError(t, page.err, page.errOut)
	require.Contains(t, page.out, kids["ship"])
	require.NotContains(t, page.out, kids["pay"])
	require.Contains(t, page.out, "More: weft runs ls --parent "+parent.RunID+" --limit 1 --cursor ")
	next := decode[api.RunList](t, s.weft(t, "runs", "ls", "--parent", parent.RunID, "--status", "COMPLETED", "--plan", "charge-inline", "-o", "json"))
	require.Len(t, next.Runs, 1)
	require.Equal(t, kids["pay"], next.Runs[0].RunID, "--parent with other filters")
	none := decode[api.RunList](t, s.weft(t, "runs", "ls", "--parent", kids["pay"], "-o", "json"))
	require.Empty(t, none.Runs, "a child with no children of its own")

	child := s.weft(t, "run", "get", kids["pay"])
	require.NoError(t, child.err, child.errOut)
	require.Contains(t, rowOf(child.out, "Parent"), "run "+parent.RunID+", step pay (attempt 1, depth 1)")
	text := s.weft(t, "run", "get", parent.RunID)
	require.NoError(t, text.err, text.errOut)
	require.Empty(t, rowOf(text.out, "Parent"), "a run no step started has no parent")
	require.Contains(t, rowOf(text.out, "pay"), "child run "+kids["pay"])
	require.Contains(t, rowOf(text.out, "ship"), "child run "+kids["ship"])
	got := decode[api.RunView](t, s.weft(t, "run", "get", kids["ship"], "-o", "json"))
	require.Equal(t, &events.RunParent{RunID: parent.RunID, StepID: "ship", LogicalAttemptID: "1", PlanVersion: "1", Depth: 1}, got.Parent)

	bad := s.weft(t, "runs", "ls", "--parent", "nope")
	require.Equal(t, cli.ExitError, bad.code)
	require.ErrorContains(t, bad.err, `parent "nope"`)
}

// rowOf returns the line of out whose first field is first, "" when none.
func rowOf(out, first string) string {
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == first {
			return line
		}
	}
	return ""
}
