package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/cli"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// greetPlan is version version of plan greet, whose one step echoes word.
func greetPlan(version, word string) string {
	return fmt.Sprintf(`planId: greet
planVersion: %q
steps:
  - id: say
    activity: echo
    input: {word: %s}
`, version, word)
}

// TestCLIPlans drives `weft plan` and `weft run start --plan` against a
// `weft dev` stack: versions pushed, listed, read, archived and restored,
// and runs started by reference.
func TestCLIPlans(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t)
	t.Run("push", func(t *testing.T) { testPlanPush(t, s) })
	t.Run("read", func(t *testing.T) { testPlanRead(t, s) })
	t.Run("archive and start", func(t *testing.T) { testPlanArchive(t, s) })
}

func testPlanPush(t *testing.T, s *cliStack) {
	v1 := writePlan(t, greetPlan("1", "hello"))
	r := s.weft(t, "plan", "push", "-f", v1)
	require.NoError(t, r.err, r.errOut)
	require.Regexp(t, `^Plan greet@1 registered in project default \(sha256:[0-9a-f]{64}\)\.\nStart it: weft run start --plan greet@1\n$`, r.out)
	r = s.weft(t, "plan", "push", "-f", v1)
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "Plan greet@1 is already registered in project default, same plan")
	again := decode[struct {
		api.PlanVersion
		Created bool `json:"created"`
	}](t, s.weft(t, "plan", "push", "-f", v1, "-o", "json"))
	require.False(t, again.Created)
	require.Equal(t, "greet", again.PlanID)
	require.Equal(t, "default", again.ProjectID)

	r = s.weft(t, "plan", "push", "-f", writePlan(t, greetPlan("1", "bonjour")))
	require.Error(t, r.err)
	require.Equal(t, cli.ExitError, r.code)
	require.ErrorContains(t, r.err, "PlanVersionConflict")
	require.ErrorContains(t, r.err, "greet@1 is registered with another plan")

	r = s.weft(t, "plan", "push", "-f", writePlan(t, greetPlan("2", "bonjour")))
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "Plan greet@2 registered in project default")
	r = s.weft(t, "plan", "push", "-f", v1, "--project", "other")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "Plan greet@1 registered in project other", "a plan is named within its project")
	r = s.weft(t, "plan", "push")
	require.ErrorContains(t, r.err, "pass -f PLAN_FILE")
}

func testPlanRead(t *testing.T, s *cliStack) {
	r := s.weft(t, "plan", "ls")
	require.NoError(t, r.err, r.errOut)
	require.Regexp(t, `^PLAN\s+VERSION\s+PROJECT\s+CREATED\s+ARCHIVED\n`, r.out)
	require.Regexp(t, `\ngreet\s+2\s+default\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+-\n`, r.out)
	require.Regexp(t, `\ngreet\s+1\s+other\s`, r.out, "every project without --project")
	list := decode[api.PlanVersionList](t, s.weft(t, "plan", "ls", "--project", "default", "-o", "json"))
	require.Len(t, list.Versions, 2)
	require.Equal(t, "2", list.Versions[0].PlanVersion, "newest first")
	r = s.weft(t, "plan", "ls", "--project", "default", "--limit", "1")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "More: weft plan ls --project default --limit 1 --cursor ")

	r = s.weft(t, "plan", "get", "greet")
	require.NoError(t, r.err, r.errOut)
	require.Regexp(t, `Latest\s+2\n`, r.out)
	require.Regexp(t, `\n2\s+\S+ \S+\s+-\s+sha256:\S+\s+latest\n1\s`, r.out)
	p := decode[api.Plan](t, s.weft(t, "plan", "get", "greet", "-o", "json"))
	require.Equal(t, "2", p.Latest)
	require.Len(t, p.Versions, 2)
	require.Empty(t, p.NextCursor)
	r = s.weft(t, "plan", "get", "greet", "--limit", "1")
	require.NoError(t, r.err, r.errOut)
	require.Regexp(t, `
2\s+\S+ \S+\s+-\s+sha256:\S+\s+latest
More: weft plan get greet --project default --limit 1 --cursor \S+
$`, r.out)
	p = decode[api.Plan](t, s.weft(t, "plan", "get", "greet", "--limit", "1", "-o", "json"))
	require.Len(t, p.Versions, 1)
	p = decode[api.Plan](t, s.weft(t, "plan", "get", "greet", "--limit", "1", "--cursor", p.NextCursor, "-o", "json"))
	require.Equal(t, "1", p.Versions[0].PlanVersion, "the next page")
	require.Equal(t, "2", p.Latest, "latest on a page that does not hold it")
	require.Empty(t, p.NextCursor)
	r = s.weft(t, "plan", "get", "greet", "--limit", "201")
	require.ErrorContains(t, r.err, "limit")
	r = s.weft(t, "plan", "get", "greet@1", "--limit", "1")
	require.ErrorContains(t, r.err, "not with @VERSION")

	r = s.weft(t, "plan", "get", "greet@1")
	require.NoError(t, r.err, r.errOut)
	require.Regexp(t, `Plan\s+greet@1 \(project default\)\n`, r.out)
	require.Contains(t, r.out, `"word": "hello"`, "the version's plan")
	v := decode[api.PlanVersion](t, s.weft(t, "plan", "get", "greet@latest", "-o", "json"))
	require.Equal(t, "2", v.PlanVersion)
	require.Contains(t, string(v.Plan), "bonjour")

	r = s.weft(t, "plan", "get", "greet@9")
	require.ErrorContains(t, r.err, "NotFound")
	r = s.weft(t, "plan", "get", "greet@2", "--project", "other")
	require.ErrorContains(t, r.err, "NotFound", "a plan is named within its project")
}

func testPlanArchive(t *testing.T, s *cliStack) {
	r := s.weft(t, "plan", "archive", "greet@2")
	require.NoError(t, r.err, r.errOut)
	require.Equal(t, "Plan greet@2 in project default is archived: starts naming it are refused.\n", r.out)
	r = s.weft(t, "run", "start", "--plan", "greet@2")
	require.Error(t, r.err)
	require.Equal(t, cli.ExitError, r.code)
	require.ErrorContains(t, r.err, "start a run of greet@2")
	require.ErrorContains(t, r.err, "PlanArchived")
	require.ErrorContains(t, r.err, "greet@2 is archived: restore it, or start another version")
	require.Equal(t, "1", decode[api.Plan](t, s.weft(t, "plan", "get", "greet", "-o", "json")).Latest, "latest passes over it")

	view := decode[api.RunView](t, s.weft(t, "run", "start", "--plan", "greet", "--wait", "-o", "json"))
	require.Equal(t, events.RunStatusCompleted, view.Status)
	require.Equal(t, "1", view.PlanVersion, "no version is the latest not archived")

	r = s.weft(t, "plan", "restore", "greet@2")
	require.NoError(t, r.err, r.errOut)
	require.Equal(t, "Plan greet@2 in project default is not archived: it can be started.\n", r.out)
	r = s.weft(t, "run", "start", "--plan", "greet@latest", "--wait")
	require.NoError(t, r.err, r.errOut)
	require.Contains(t, r.out, "of registered plan greet@latest.")
	require.Contains(t, r.out, "COMPLETED")
	require.Regexp(t, `Plan\s+greet 2\n`, r.out, "latest is the restored version")

	r = s.weft(t, "run", "start", "--plan", "greet@9")
	require.ErrorContains(t, r.err, "NotFound")
	r = s.weft(t, "run", "start", "--plan", "greet", "-f", example("hello.yaml"))
	require.ErrorContains(t, r.err, "not both")
	r = s.weft(t, "plan", "archive", "greet")
	require.ErrorContains(t, r.err, "names no version")
}
