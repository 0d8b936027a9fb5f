package expr

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
)

// VarValue is a compiled expression over a single named variable, whose
// value, of any type, becomes a JSON document: a trigger's input
// expression over its event. It reads nothing but that variable, with the
// same library, limits and JSON conversion as a plan's expressions. It is
// immutable and safe for concurrent use.
type VarValue struct {
	name, path string
	prg        cel.Program
}

// CompileVarValue compiles src, at JSON path path, as a CEL expression,
// bare or written as one "${{ EXPR }}", that may read the variable name
// (a JSON document) and nothing else. Problems are reported as Compile
// reports them: the path, the 1-based column in the expression, the
// message. An expression that compiled before, for the same variable and
// limits, comes from the cache plan expressions use.
func CompileVarValue(name, src, path string, lim Limits) (*VarValue, []Problem) {
	env, err := varEnv(name)
	if err != nil {
		return nil, []Problem{{Path: path, Message: err.Error()}}
	}
	if _, _, problem := split(strings.TrimSpace(src)); problem != "" {
		return nil, []Problem{{Path: path, Message: problem}}
	}
	// The check's name keys the cache: no plan expression's check is
	// named so, so one never answers for the other's environment.
	b, problems := compileBareIn(env, src, path, Scope{}, lim, typeCheck{name: "var:" + name})
	if len(problems) > 0 {
		return nil, problems
	}
	return &VarValue{name: name, path: path, prg: b.prg}, nil
}

// Eval evaluates the expression with its variable set to doc (empty means
// null) and returns the JSON value. It fails with an *EvalError for an
// evaluation error (a missing key, a type error, the cost budget) or a
// value with no JSON form.
func (v *VarValue) Eval(doc json.RawMessage) (json.RawMessage, error) {
	val, err := fromJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("expr: the variable %s: %w", v.name, err)
	}
	out, _, err := v.prg.Eval(map[string]any{v.name: val})
	if err != nil {
		return nil, &EvalError{Path: v.path, Message: err.Error()}
	}
	return jsonOf(out, v.path)
}

// varEnvs holds the environment of each variable name, built once.
var varEnvs = struct {
	sync.Mutex
	m map[string]*cel.Env
}{m: map[string]*cel.Env{}}

// varEnv returns the environment with name, of a type known at run time,
// as its only variable, and the library of newEnv.
func varEnv(name string) (*cel.Env, error) {
	varEnvs.Lock()
	defer varEnvs.Unlock()
	if env, ok := varEnvs.m[name]; ok {
		return env, nil
	}
	env, err := cel.NewEnv(append(library(), cel.Variable(name, cel.DynType))...)
	if err != nil {
		return nil, fmt.Errorf("expr: build the CEL environment of %s: %w", name, err)
	}
	varEnvs.m[name] = env
	return env, nil
}
