package expr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"

	"github.com/weftrun/weft/pkg/strictjson"
)

// Template is a JSON document whose strings may hold expressions, compiled
// against one Scope. A string that is exactly "${{ EXPR }}" becomes the
// JSON value of EXPR, of any type; a string with expressions among other
// text becomes that text with each expression's value (a string, number
// or bool) in its place. Everything else is kept as it is. A Template is
// immutable and safe for concurrent use.
type Template struct {
	doc   any // the decoded document, each string with expressions a *field
	exprs int
	// inputTypes are the scope's (Scope.InputTypes), which evaluation
	// binds.
	inputTypes map[string]string
}

// field is a string of the document that holds expressions.
type field struct {
	path  string
	texts []string // len(progs)+1 pieces of text around the expressions
	progs []cel.Program
}

// whole reports whether the string is exactly one expression.
func (f *field) whole() bool { return len(f.progs) == 1 && f.texts[0] == "" && f.texts[1] == "" }

// Compile parses and type-checks every expression in doc (valid JSON),
// whose JSON path is root ("input"), against scope. It returns every
// problem found, in document order (object keys sorted); the Template is
// nil when there is any.
func Compile(doc json.RawMessage, root string, scope Scope, lim Limits) (*Template, []Problem) {
	env, err := envFor(scope)
	if err != nil {
		return nil, []Problem{{Path: root, Message: err.Error()}}
	}
	var v any
	if len(doc) > 0 {
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, []Problem{{Path: root, Message: "not valid JSON: " + err.Error()}}
		}
	}
	c := compiler{env: env, scope: scope, lim: lim.withDefaults()}
	t := &Template{doc: c.value(root, v), inputTypes: maps.Clone(scope.InputTypes)}
	if len(c.problems) > 0 {
		return nil, c.problems
	}
	t.exprs = c.exprs
	return t, nil
}

// HasExpressions reports whether the document holds any expression.
func (t *Template) HasExpressions() bool { return t != nil && t.exprs > 0 }

type compiler struct {
	env      *cel.Env
	scope    Scope
	lim      Limits
	problems []Problem
	exprs    int
}

func (c *compiler) add(path string, column int, format string, args ...any) {
	c.problems = append(c.problems, Problem{Path: path, Column: column, Message: fmt.Sprintf(format, args...)})
}

// value returns v, found at path, with its strings compiled.
func (c *compiler) value(path string, v any) any {
	switch t := v.(type) {
	case string:
		if f := c.field(path, t); f != nil {
			return f
		}
		return t
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = c.value(strictjson.IndexPath(path, i), e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for _, k := range slices.Sorted(maps.Keys(t)) {
			out[k] = c.value(strictjson.MemberPath(path, k, nil), t[k])
		}
		return out
	default:
		return v
	}
}

// field compiles the expressions of s, or returns nil when it has none or
// they do not compile (the problems are recorded).
func (c *compiler) field(path, s string) *field {
	if !Contains(s) {
		return nil
	}
	texts, sources, problem := split(s)
	if problem != "" {
		c.add(path, 0, "%s", problem)
		return nil
	}
	f := &field{path: path, texts: texts}
	check := anyType
	if len(sources) > 1 || texts[0] != "" || texts[1] != "" {
		check = scalarType
	}
	for _, src := range sources {
		prg, ok := c.compile(path, src, check)
		if !ok {
			return nil
		}
		f.progs = append(f.progs, prg)
	}
	c.exprs += len(f.progs)
	return f
}

// compile compiles one expression's source; check, if set, says what is
// wrong with the expression's type, or "". An expression that compiled
// before in the same scope comes from the cache.
func (c *compiler) compile(path, src string, check typeCheck) (cel.Program, bool) {
	key := c.programKey(src, check.name)
	if prg, ok := cachedProgram(key); ok {
		return prg, true
	}
	prg, ok := c.compileNew(path, src, check)
	if ok {
		cacheProgram(key, prg)
	}
	return prg, ok
}

// compileNew compiles one expression's source.
func (c *compiler) compileNew(path, src string, check typeCheck) (cel.Program, bool) {
	switch {
	case src == "":
		c.add(path, 0, "an empty expression")
		return nil, false
	case len(src) > c.lim.MaxExpressionBytes:
		c.add(path, 0, "the expression is %d bytes, over the limit of %d", len(src), c.lim.MaxExpressionBytes)
		return nil, false
	}
	ast, iss := compileSerially(c.env, src)
	if iss != nil && iss.Err() != nil {
		e := iss.Errors()[0]
		c.add(path, e.Location.Column()+1, "%s", e.Message)
		return nil, false
	}
	if !c.refsOK(path, ast) {
		return nil, false
	}
	if check.why != nil {
		if why := check.why(ast.OutputType()); why != "" {
			c.add(path, 0, "%s", why)
			return nil, false
		}
	}
	prg, err := c.env.Program(ast, cel.CostLimit(c.lim.CostBudget))
	if err != nil {
		c.add(path, 0, "%s", err.Error())
		return nil, false
	}
	if why := constantCostProblem(c.env, ast, prg, c.lim.CostBudget); why != "" {
		c.add(path, 0, "%s", why)
		return nil, false
	}
	return prg, true
}

// compiling serialises the type checks of new expressions. cel-go v0.33
// shares one checker environment among all compilations of a cel.Env and
// initialises its symbol catalog lazily: a check that reports an
// undeclared name writes it while a concurrent check that enters a
// comprehension's scope reads it unguarded (a data race the race
// detector finds when two plans compile at once). Compiled programs are
// cached (cache.go), so only an expression's first compilation waits;
// evaluation is never serialised.
var compiling sync.Mutex

// compileSerially is env.Compile(src) under compiling.
func compileSerially(env *cel.Env, src string) (*cel.Ast, *cel.Issues) {
	compiling.Lock()
	defer compiling.Unlock()
	return env.Compile(src)
}

// typeCheck says why an expression's type does not fit where it is, or
// "" when it does; name tells checks apart in the cache.
type typeCheck struct {
	name string
	why  func(*cel.Type) string
}

// The type checks: any type, what text can hold, a condition's.
var (
	anyType    = typeCheck{name: "any"}
	scalarType = typeCheck{name: "scalar", why: scalar}
	boolType   = typeCheck{name: "bool", why: boolean}
)

// scalar says why t may not be interpolated into text, unless it is a
// string, a number, a bool, or a type known only at run time.
func scalar(t *cel.Type) string {
	switch t.Kind() {
	case cel.StringType.Kind(), cel.IntType.Kind(), cel.UintType.Kind(), cel.DoubleType.Kind(),
		cel.BoolType.Kind(), cel.DynType.Kind(), cel.AnyType.Kind():
		return ""
	default:
		return "an expression inside text must yield a string, number or bool, not " + t.String()
	}
}

// Eval resolves the document with vars: every expression evaluated, each
// string with expressions replaced. It fails with an *EvalError, naming
// the first expression that failed, in document order.
func (t *Template) Eval(vars Vars) (json.RawMessage, error) {
	act, err := vars.activation(t.inputTypes)
	if err != nil {
		return nil, err
	}
	out, err := resolve(t.doc, act)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("expr: encode the resolved document: %w", err)
	}
	return b, nil
}

// resolve returns v with every field evaluated.
func resolve(v any, act map[string]any) (any, error) {
	switch t := v.(type) {
	case *field:
		return t.eval(act)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			var err error
			if out[i], err = resolve(e, act); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for _, k := range slices.Sorted(maps.Keys(t)) {
			var err error
			if out[k], err = resolve(t[k], act); err != nil {
				return nil, err
			}
		}
		return out, nil
	default:
		return v, nil
	}
}

// eval evaluates the field's expressions and returns its value.
func (f *field) eval(act map[string]any) (any, error) {
	vals := make([]any, len(f.progs))
	for i, prg := range f.progs {
		out, _, err := prg.Eval(act)
		if err != nil {
			return nil, &EvalError{Path: f.path, Message: err.Error()}
		}
		if vals[i], err = toJSON(out); err != nil {
			return nil, &EvalError{Path: f.path, Message: err.Error()}
		}
	}
	if f.whole() {
		return vals[0], nil
	}
	var b strings.Builder
	for i, text := range f.texts {
		b.WriteString(text)
		if i == len(vals) {
			break
		}
		s, err := interpolate(vals[i])
		if err != nil {
			return nil, &EvalError{Path: f.path, Message: err.Error()}
		}
		b.WriteString(s)
	}
	return b.String(), nil
}
