package expr

import (
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
	env, err := envFor(scope)
	if err != nil {
		return nil, []Problem{{Path: path, Message: err.Error()}}
	}
	c := compiler{env: env, scope: scope, lim: lim.withDefaults()}
	src = strings.TrimSpace(src)
	if texts, sources, problem := split(src); problem == "" && len(sources) == 1 && texts[0] == "" && texts[1] == "" {
		src = sources[0]
	}
	prg, ok := c.compile(path, src, boolean)
	if !ok {
		return nil, c.problems
	}
	return &Condition{path: path, prg: prg}, nil
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
