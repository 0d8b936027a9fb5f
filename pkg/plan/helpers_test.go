package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireProblem asserts that err is a *ValidationError with a problem of
// the given code, that the problem names stepID (empty: a plan-level
// problem) and that Error() names the step, and returns the problem.
func requireProblem(t *testing.T, err error, code, stepID string) Problem {
	t.Helper()
	require.Error(t, err)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	for _, p := range ve.Problems {
		if p.Code != code || p.StepID != stepID {
			continue
		}
		require.NotEmpty(t, p.Message)
		require.True(t, strings.HasPrefix(err.Error(), "plan: "), err.Error())
		if stepID != "" {
			require.Contains(t, err.Error(), "step "+quote(stepID)+": ")
		}
		require.True(t, ve.Has(code))
		return p
	}
	require.Failf(t, "problem not found", "want code %s for step %q in %v", code, stepID, ve.Problems)
	return Problem{}
}

// requireOnly asserts that err holds exactly one problem, with code.
func requireOnly(t *testing.T, err error, code string) Problem {
	t.Helper()
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Problems, 1, "problems: %v", ve.Problems)
	require.Equal(t, code, ve.Problems[0].Code, "problem: %v", ve.Problems[0])
	return ve.Problems[0]
}

// readTestdata returns the contents of testdata/name.
func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// validPlan returns a small valid plan built in Go: a, then b.
func validPlan() *Plan {
	return &Plan{
		PlanID:      "p",
		PlanVersion: "v1",
		Steps: []Step{
			{ID: "a", Activity: "echo"},
			{ID: "b", Activity: "echo", DependsOn: []string{"a"}},
		},
	}
}

// planWith returns a valid plan whose steps are steps.
func planWith(steps ...Step) *Plan {
	return &Plan{PlanID: "p", PlanVersion: "v1", Steps: steps}
}

// step returns an activity step with the given id and dependencies.
func step(id string, deps ...string) Step {
	return Step{ID: id, Activity: "echo", DependsOn: deps}
}
