package expr

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// bare is a compiled expression written alone, bare or as one
// "${{ EXPR }}", at a JSON path: a condition or a value.
type bare struct {
	path string
	src  string   // the CEL source, without delimiters
	env  *cel.Env // the environment it compiled in
	prg  cel.Program
	// inputTypes are the scope's (Scope.InputTypes), which evaluation
	// binds.
	inputTypes map[string]string
}

// compileBare compiles src, at JSON path path, against scope, checking
// its type with check.
func compileBare(src, path string, scope Scope, lim Limits, check typeCheck) (bare, []Problem) {
	env, err := envFor(scope)
	if err != nil {
		return bare{}, []Problem{{Path: path, Message: err.Error()}}
	}
	return compileBareIn(env, src, path, scope, lim, check)
}

// compileBareIn is compileBare in the environment env.
func compileBareIn(env *cel.Env, src, path string, scope Scope, lim Limits, check typeCheck) (bare, []Problem) {
	c := compiler{env: env, scope: scope, lim: lim.withDefaults()}
	src = bareSource(src)
	prg, ok := c.compile(path, src, check)
	if !ok {
		return bare{}, c.problems
	}
	return bare{path: path, src: src, env: env, prg: prg, inputTypes: maps.Clone(scope.InputTypes)}, nil
}

// bareSource returns the CEL source of src, an expression written bare or
// as one "${{ EXPR }}": EXPR, trimmed.
func bareSource(src string) string {
	src = strings.TrimSpace(src)
	if texts, sources, problem := split(src); problem == "" && len(sources) == 1 && texts[0] == "" && texts[1] == "" {
		return sources[0]
	}
	return src
}

// eval evaluates the expression with vars; an evaluation error is an
// *EvalError.
func (b bare) eval(vars Vars) (ref.Val, error) {
	act, err := vars.activation(b.inputTypes)
	if err != nil {
		return nil, err
	}
	out, _, err := b.prg.Eval(act)
	if err != nil {
		return nil, &EvalError{Path: b.path, Message: err.Error()}
	}
	return out, nil
}

// Condition is a compiled bool expression: a step's "if". It is immutable
// and safe for concurrent use.
type Condition struct{ bare }

// CompileCondition compiles src, at JSON path path, against scope: a CEL
// expression, bare or written as one "${{ EXPR }}", that must yield a
// bool (a type known only at run time is checked then).
func CompileCondition(src, path string, scope Scope, lim Limits) (*Condition, []Problem) {
	b, problems := compileBare(src, path, scope, lim, boolType)
	if len(problems) > 0 {
		return nil, problems
	}
	return &Condition{b}, nil
}

// Eval evaluates the condition with vars. It fails with an *EvalError for
// an evaluation error or a value that is not a bool.
func (c *Condition) Eval(vars Vars) (bool, error) {
	out, err := c.eval(vars)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, &EvalError{Path: c.path, Message: "a condition must yield a bool, not " + out.Type().TypeName()}
	}
	return bool(b), nil
}

// Value is a compiled expression whose value, of any type, becomes a JSON
// document: a plan's output. It is immutable and safe for concurrent use.
type Value struct{ bare }

// CompileValue compiles src, at JSON path path, against scope: a CEL
// expression, bare or written as one "${{ EXPR }}".
func CompileValue(src, path string, scope Scope, lim Limits) (*Value, []Problem) {
	b, problems := compileBare(src, path, scope, lim, anyType)
	if len(problems) > 0 {
		return nil, problems
	}
	return &Value{b}, nil
}

// Eval evaluates the expression with vars and returns its JSON value. It
// fails with an *EvalError.
func (v *Value) Eval(vars Vars) (json.RawMessage, error) {
	out, err := v.eval(vars)
	if err != nil {
		return nil, err
	}
	return jsonOf(out, v.path)
}

// jsonOf returns the JSON document of out, the value of the expression
// at path; a value with no JSON form is an *EvalError.
func jsonOf(out ref.Val, path string) (json.RawMessage, error) {
	doc, err := toJSON(out)
	if err != nil {
		return nil, &EvalError{Path: path, Message: err.Error()}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("expr: encode the value: %w", err)
	}
	return b, nil
}

// boolean says why t may not be a condition's type, unless it is bool or
// a type known only at run time.
func boolean(t *cel.Type) string {
	switch t.Kind() {
	case cel.BoolType.Kind(), cel.DynType.Kind(), cel.AnyType.Kind():
		return ""
	default:
		return "a condition must yield a bool, not " + t.String()
	}
}
