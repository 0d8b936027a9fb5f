package intake

import (
	"fmt"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/plan/expr"
)

// priorityProblems refuses a start's priority outside api.MinPriority to
// api.MaxPriority (zero is the default).
func priorityProblems(priority int) []api.Problem {
	if priority == 0 || priority >= api.MinPriority && priority <= api.MaxPriority {
		return nil
	}
	return []api.Problem{problem("priority", api.ProblemInvalid,
		fmt.Sprintf("%d; a priority is %d (lowest) to %d, %d when left out", priority, api.MinPriority, api.MaxPriority, api.DefaultPriority))}
}

// runKeyProblems evaluates pl's concurrency limits for the start's input
// (plan.Validated.RunKeys), as the engine will when it admits the run,
// and returns the problems of those that yield no key or no limit, at
// their field of the plan ("plan.concurrency[0].key"): a start whose
// input makes a limit meaningless is refused before anything is stored.
func runKeyProblems(pl plan.Validated, req api.StartRunRequest) []api.Problem {
	_, found := pl.RunKeys(runKeyVars(req.Input, req.TenantID, req.ProjectID, req.EnvironmentID, pl))
	out := make([]api.Problem, len(found))
	for i, f := range found {
		out[i] = api.Problem{Path: "plan." + f.Field, Code: f.Code, Message: f.Message}
	}
	return out
}

// runKeyVars are what a run's concurrency keys read: its input and
// run.*, without the run's id, which is not known when a start is
// checked (the engine evaluates them so too).
func runKeyVars(input []byte, tenant, project, environment string, pl plan.Validated) expr.Vars {
	return expr.Vars{Input: input, Run: expr.RunVars{TenantID: tenant, ProjectID: project, EnvironmentID: environment,
		PlanID: pl.PlanID(), PlanVersion: pl.PlanVersion()}}
}
