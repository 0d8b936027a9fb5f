package expr

import (
	"encoding/json"
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
)

// Condition is a compiled bool expression: a step's "if". It is immutable
// and safe for concurrent use.
type Condition struct {
	path string
	prg  cel.Program
}

// CompileCondition compiles src, at JSON path path, against scope: a CEL
// expression, bare or written as one "${{ EXPR }}", that must yield a
// bool (a type known only at run time is checked then).
func CompileCondition(src, path string, scope Scope, lim Limits) (*Condition, []Problem) {
	prg, problems := compileBare(src, path, scope, lim, boolType)
	if len(problems) > 0 {
		return nil, problems
	}
	return &Condition{path: path, prg: prg}, nil
}

// compileBare compiles src, a bare expression or one "${{ EXPR }}".
func compileBare(src, path string, scope Scope, lim Limits, check typeCheck) (cel.Program, []Problem) {
	env, err := envFor(scope)
	if err != nil {
		return nil, []Problem{{Path: path, Message: err.Error()}}
	}
	c := compiler{env: env, scope: scope, lim: lim.withDefaults()}
	src = strings.TrimSpace(src)
	if texts, sources, problem := split(src); problem == "" && len(sources) == 1 && texts[0] == "" && texts[1] == "" {
		src = sources[0]
	}
	prg, ok := c.compile(path, src, check)
	if !ok {
		return nil, c.problems
	}
	return prg, nil
}

// Value is a compiled expression whose value, of any type, becomes a JSON
// document: a plan's output. It is immutable and safe for concurrent use.
type Value struct {
	path string
	prg  cel.Program
}

// CompileValue compiles src, at JSON path path, against scope: a CEL
// expression, bare or written as one "${{ EXPR }}".
func CompileValue(src, path string, scope Scope, lim Limits) (*Value, []Problem) {
	prg, problems := compileBare(src, path, scope, lim, anyType)
	if len(problems) > 0 {
		return nil, problems
	}
	return &Value{path: path, prg: prg}, nil
}

// Eval evaluates the expression with vars and returns its JSON value. It
// fails with an *EvalError.
func (v *Value) Eval(vars Vars) (json.RawMessage, error) {
	act, err := vars.activation()
	if err != nil {
		return nil, err
	}
	out, _, err := v.prg.Eval(act)
	if err != nil {
		return nil, &EvalError{Path: v.path, Message: err.Error()}
	}
	doc, err := toJSON(out)
	if err != nil {
		return nil, &EvalError{Path: v.path, Message: err.Error()}
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

// Eval evaluates the condition with vars. It fails with an *EvalError for
// an evaluation error or a value that is not a bool.
func (c *Condition) Eval(vars Vars) (bool, error) {
	act, err := vars.activation()
	if err != nil {
		return false, err
	}
	out, _, err := c.prg.Eval(act)
	if err != nil {
		return false, &EvalError{Path: c.path, Message: err.Error()}
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, &EvalError{Path: c.path, Message: "a condition must yield a bool, not " + out.Type().TypeName()}
	}
	return bool(b), nil
}
