package api

// Problem is one thing wrong with a request, an element of the
// details.problems of a CodeInvalidArgument error. A request is checked in
// full before it is refused, so the problems list every field at fault,
// not only the first: the strict-JSON problems of a body, the fields a
// start lacks or breaks the rules of, or the problems pkg/plan finds in a
// plan.
type Problem struct {
	// Path is the JSON path of the offending value in the request body:
	// "tenantId", "plan.steps[id=b].input.v"; "" for the whole body.
	Path string `json:"path"`
	// Code is stable: one of the Problem… constants, a strict-JSON code
	// (unknown_field, wrong_type, duplicate_key, malformed, …) or one of
	// pkg/plan's Code… constants (INVALID_EXPRESSION, …).
	Code string `json:"code"`
	// Message says what is wrong, for people.
	Message string `json:"message"`
	// StepID names the plan's step a plan problem is about; absent for a
	// problem of the plan as a whole or of another field.
	StepID string `json:"stepId,omitempty"`
	// Keyword is, for an input that does not fit its plan's input schema
	// (code INPUT_MISMATCH), the schema keyword it breaks: type, required,
	// minimum, additionalProperties, …; absent for any other problem.
	Keyword string `json:"keyword,omitempty"`
}

// Codes of the Problems of a request's fields.
const (
	// ProblemMissing: a required field is absent or empty.
	ProblemMissing = "missing"
	// ProblemInvalid: a field is present but breaks its rule (an id with
	// white space, a planId that is not the plan's own, …).
	ProblemInvalid = "invalid"
)
