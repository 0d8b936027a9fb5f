package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
)

// PLAN_ID@VERSION splits at its last @; without one there is no version.
func TestSplitPlanRef(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, planID, version string }{
		{"hello", "hello", ""},
		{"hello@1", "hello", "1"},
		{"hello@latest", "hello", "latest"},
		{"team@x@2", "team@x", "2"},
		{"hello@", "hello", ""},
		{"@1", "", "1"},
	} {
		planID, version := splitPlanRef(c.in)
		require.Equal(t, [2]string{c.planID, c.version}, [2]string{planID, version}, c.in)
	}
}

// `run start --plan` names the plan by reference, latest without a
// version, and carries no plan; it takes -f or --plan, not both.
func TestStartRequestByPlanRef(t *testing.T) {
	t.Parallel()
	empty := ""
	where := whereFlags{tenant: &empty, project: &empty, environment: &empty}
	req, err := startFlags{planRef: "hello", where: where}.request()
	require.NoError(t, err)
	require.Equal(t, &api.PlanRef{PlanID: "hello", PlanVersion: api.PlanVersionLatest}, req.PlanRef)
	require.Nil(t, req.Plan)
	require.Empty(t, req.PlanID, "the gateway sets the resolved version's")
	require.Equal(t, [3]string{defaultTenant, defaultProject, defaultEnvironment}, [3]string{req.TenantID, req.ProjectID, req.EnvironmentID})
	require.Equal(t, "registered plan hello@latest", startedPlan(req))

	req, err = startFlags{planRef: "hello@2", where: where}.request()
	require.NoError(t, err)
	require.Equal(t, "2", req.PlanRef.PlanVersion)

	_, err = startFlags{planRef: "@2", where: where}.request()
	require.ErrorContains(t, err, "names no plan")
	_, err = startFlags{planRef: "hello", file: "plan.yaml", where: where}.request()
	require.ErrorContains(t, err, "not both")
	_, err = startFlags{where: where}.request()
	require.ErrorContains(t, err, "--plan PLAN_ID[@VERSION]")
}
