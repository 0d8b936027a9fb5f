package plan

import (
	"fmt"
	"strings"

	"github.com/weftrun/weft/pkg/strictjson"
)

// Problem codes. They are stable: callers (the signal-gateway's API, the
// UI, tests) match on them, so a code is never renamed or reused.
const (
	// CodeMalformed: the input is not a well-formed plan document: a syntax
	// error, invalid UTF-8, a value of the wrong type, trailing data after
	// the plan, a top level that is not an object, or a YAML mapping key that
	// is not a string.
	CodeMalformed = "MALFORMED"
	// CodeUnknownField: a field name the schema does not define. Names are
	// matched case-sensitively, so "ID" is unknown where "id" is expected.
	CodeUnknownField = "UNKNOWN_FIELD"
	// CodeDuplicateKey: the same key twice in one object, anywhere in the
	// document, step inputs included.
	CodeDuplicateKey = "DUPLICATE_KEY"
	// CodeTooDeep: objects and arrays nested deeper than Limits.MaxDepth.
	CodeTooDeep = "TOO_DEEP"
	// CodeUnsupportedSchemaVersion: schemaVersion is newer than this code
	// knows (SchemaVersion), or not positive.
	CodeUnsupportedSchemaVersion = "UNSUPPORTED_SCHEMA_VERSION"
	// CodePlanTooLarge: the document or the encoded plan exceeds
	// Limits.MaxPlanBytes.
	CodePlanTooLarge = "PLAN_TOO_LARGE"
	// CodeTooManySteps: more steps than Limits.MaxSteps.
	CodeTooManySteps = "TOO_MANY_STEPS"
	// CodeEmptyPlan: the plan has no steps.
	CodeEmptyPlan = "EMPTY_PLAN"
	// CodeMissingField: a required field is empty.
	CodeMissingField = "MISSING_FIELD"
	// CodeInvalidID: planId, planVersion, a step id or a secret name breaks
	// the id rules (see Validate).
	CodeInvalidID = "INVALID_ID"
	// CodeDuplicateStepID: two steps share an id.
	CodeDuplicateStepID = "DUPLICATE_STEP_ID"
	// CodeInvalidKind: a step kind other than "activity" or "waitSignal".
	CodeInvalidKind = "INVALID_KIND"
	// CodeFieldNotAllowed: a field that does not apply to the step's kind,
	// such as activity on a waitSignal step.
	CodeFieldNotAllowed = "FIELD_NOT_ALLOWED"
	// CodeInvalidName: an activity name, secret provider, secret key or
	// idempotency key that is too long or holds whitespace or control
	// characters.
	CodeInvalidName = "INVALID_NAME"
	// CodeInvalidQueue: a queue name that is not a valid NATS subject token.
	CodeInvalidQueue = "INVALID_QUEUE"
	// CodeInvalidSignal: a waitSignal step's signal breaks the id rules or
	// names a control signal (PAUSE, RESUME, CANCEL, RETRY_STEP).
	CodeInvalidSignal = "INVALID_SIGNAL"
	// CodeInvalidTimeout: a negative step timeout.
	CodeInvalidTimeout = "INVALID_TIMEOUT"
	// CodeInvalidRetry: a retry policy outside its bounds.
	CodeInvalidRetry = "INVALID_RETRY"
	// CodeInvalidInput: a step input that is not valid JSON.
	CodeInvalidInput = "INVALID_INPUT"
	// CodeInputTooLarge: a step input larger than Limits.MaxStepInputBytes.
	CodeInputTooLarge = "INPUT_TOO_LARGE"
	// CodeSecretValue: a step input value that looks like a secret. The
	// message names the JSON path, never the value.
	CodeSecretValue = "SECRET_VALUE"
	// CodeUnknownSecretRef: a {"secretRef": name} naming no secret the step
	// declares.
	CodeUnknownSecretRef = "UNKNOWN_SECRET_REF"
	// CodeInvalidSecretRef: an object with a "secretRef" key that is not
	// exactly {"secretRef": "<name>"}.
	CodeInvalidSecretRef = "INVALID_SECRET_REF"
	// CodeDuplicateSecret: a step declares two secrets with the same name.
	CodeDuplicateSecret = "DUPLICATE_SECRET"
	// CodeUnknownDependency: dependsOn names no step of the plan.
	CodeUnknownDependency = "UNKNOWN_DEPENDENCY"
	// CodeSelfDependency: a step depends on itself.
	CodeSelfDependency = "SELF_DEPENDENCY"
	// CodeDuplicateDependency: a step lists the same dependency twice.
	CodeDuplicateDependency = "DUPLICATE_DEPENDENCY"
	// CodeCycle: the dependencies form a cycle; the message lists its path.
	CodeCycle = "CYCLE"
	// CodeInvalidExpression: an expression in a step's input that does not
	// compile: a syntax error, an unknown variable, a step that is not an
	// ancestor of this one, a type error known at submission, an unclosed
	// "${{", or an expression longer than Limits.MaxExpressionBytes. The
	// problem's field is the JSON path of the string in the step
	// ("input.customer.name"), and its message starts with the column in the
	// expression when there is one.
	CodeInvalidExpression = "INVALID_EXPRESSION"
	// CodeInvalidRunIf: a runIf other than allSucceeded, allDone and
	// anyFailed, or a handles entry that is not an ancestor of its step.
	CodeInvalidRunIf = "INVALID_RUN_IF"
	// CodeInvalidForEach: forEach on a step that is not an activity step,
	// maxParallel or failFast without forEach, a maxParallel out of
	// range, or a step id that is a child id of a forEach step.
	CodeInvalidForEach = "INVALID_FOR_EACH"
	// CodeForEachTooLarge: a forEach list known before the run, longer
	// than MaxForEachElements or with JSON over MaxForEachBytes: the value
	// of an expression that reads no variable (Validate), or a path of the
	// run's input the expression reads and nothing else, given the run's
	// input (Validated.CheckInput).
	CodeForEachTooLarge = "FOR_EACH_TOO_LARGE"
	// CodeInvalidInputSchema: an inputSchema that is not a schema, uses a
	// keyword outside the supported subset (InputSchemaKeywords), names a
	// $schema other than JSON Schema 2020-12, refers to anything outside
	// itself, or that the meta-schema refuses. The problem's field is the
	// path in the schema ("inputSchema.properties.total.format").
	CodeInvalidInputSchema = "INVALID_INPUT_SCHEMA"
	// CodeInputSchemaTooLarge: an inputSchema larger than
	// Limits.MaxInputSchemaBytes.
	CodeInputSchemaTooLarge = "INPUT_SCHEMA_TOO_LARGE"
	// CodeInputMismatch: a run's input that does not fit its plan's input
	// schema (Validated.CheckInputSchema); its message names the schema
	// keyword.
	CodeInputMismatch = "INPUT_MISMATCH"
	// CodeInvalidParentClose: a subPlan step's parentClose other than
	// cancel and abandon.
	CodeInvalidParentClose = "INVALID_PARENT_CLOSE"
	// CodeRunTooDeep: a subPlan step's inline plan whose child run would
	// nest deeper than Limits.MaxRunDepth.
	CodeRunTooDeep = "RUN_TOO_DEEP"
	// CodeInvalidLabels: a subPlan step's labels that break the limits of
	// a run's labels (api.CheckLabels); the field is the label's path.
	CodeInvalidLabels = "INVALID_LABELS"
)

// Problem is one reason a plan was rejected.
type Problem struct {
	// StepID is the id of the offending step, or empty for a problem of the
	// plan as a whole or one found before steps could be identified.
	StepID string
	// Field is the path of the offending field: relative to the step when
	// StepID is set ("dependsOn", "retry.maxAttempts", "input.db.password"),
	// otherwise relative to the plan ("planId", "steps[3].id").
	Field string
	// Code is one of the Code… constants.
	Code string
	// Message says what is wrong for people. It never contains a suspected
	// secret value.
	Message string
}

// String renders the problem as `step "b": dependsOn: unknown step "zz"`.
func (p Problem) String() string {
	var b strings.Builder
	if p.StepID != "" {
		b.WriteString("step ")
		b.WriteString(quote(p.StepID))
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// ValidationError is returned by Parse and Validate when a plan is
// rejected. It lists every problem found, in a stable order: plan-level
// problems first, then each step's in declaration order, then cycles.
// (Parse stops at the first problem of a document it cannot decode.)
type ValidationError struct {
	Problems []Problem
}

// maxProblemsInError bounds how many problems Error spells out.
const maxProblemsInError = 10

// Error implements error. It names every problem up to ten, each with its
// step: `plan: step "b": dependsOn: unknown step "zz"`.
func (e *ValidationError) Error() string {
	if len(e.Problems) == 0 {
		return "plan: invalid"
	}
	return "plan: " + strictjson.Summarize(e.Problems, maxProblemsInError)
}

// Has reports whether any problem has the given code.
func (e *ValidationError) Has(code string) bool {
	for _, p := range e.Problems {
		if p.Code == code {
			return true
		}
	}
	return false
}

// problems accumulates Problems in the order they are found.
type problems []Problem

func (ps *problems) add(stepID, field, code, format string, args ...any) {
	*ps = append(*ps, Problem{StepID: stepID, Field: field, Code: code, Message: fmt.Sprintf(format, args...)})
}

// err returns nil when there are no problems, else a *ValidationError.
func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &ValidationError{Problems: ps}
}

// single returns a *ValidationError with one plan-level problem.
func single(field, code, format string, args ...any) error {
	var ps problems
	ps.add("", field, code, format, args...)
	return ps.err()
}

// quote renders a user-supplied name for a message: Go-quoted, so control
// characters and invalid UTF-8 show as escapes, and cut to 64 bytes.
func quote(s string) string { return strictjson.Quote(s) }
