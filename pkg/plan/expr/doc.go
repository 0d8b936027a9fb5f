// Package expr is the expression language of plans: CEL (cel.dev/cel-go),
// typed, side-effect free and terminating, inside step inputs.
//
// A JSON string of a step's input that is exactly "${{ EXPR }}" becomes
// the JSON value of EXPR, of any type; a string with "${{ EXPR }}" among
// other text becomes the text with each expression's value in its place,
// and such an expression must yield a string, number or bool. An
// expression reads input (the run's input), steps.<id>.status,
// steps.<id>.output and steps.<id>.artifacts of the step's ancestors only
// (steps["<id>"] for an id that is not a CEL identifier, such as one with
// a '-'), run.id, run.planId, run.planVersion, run.tenantId,
// run.projectId and run.environmentId, and, inside a forEach step, item
// and index. There is no clock, no randomness and no I/O, so an
// expression evaluated twice on the same values gives the same bytes:
// Weft records what it resolved, and replay reads the record.
//
// JSON numbers that are whole and fit in 64 bits read as CEL ints
// (input.count + 1 works), others as doubles; CEL never mixes the two
// implicitly (input.ratio * 2.0, not * 2).
//
// Compile checks every expression once, at submission: its syntax, its
// types as far as they are known, its length (Limits.MaxExpressionBytes)
// and the steps it names, and evaluates one that reads no variable, whose
// cost is the same in every run, refusing it when it exceeds
// Limits.CostBudget. Template.Eval evaluates them when the step is
// scheduled, each within Limits.CostBudget. CEL's static cost estimate is
// not used to refuse an expression that reads a variable: its lower
// bound overstates the cost of exists and all, which stop at their first
// match, so only evaluation knows whether such an expression fits.
package expr
