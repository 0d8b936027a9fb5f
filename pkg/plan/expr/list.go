package expr

import (
	"encoding/json"
	"fmt"

	"cel.dev/cel-go/cel"
)

// List is a compiled expression that yields a list: a forEach step's
// elements. It is immutable and safe for concurrent use.
type List struct{ bare }

// listType is the type check of a List.
var listType = typeCheck{name: "list", why: listy}

// CompileList compiles src, at JSON path path, against scope: a CEL
// expression, bare or written as one "${{ EXPR }}", that must yield a list
// (a type known only at run time is checked then).
func CompileList(src, path string, scope Scope, lim Limits) (*List, []Problem) {
	b, problems := compileBare(src, path, scope, lim, listType)
	if len(problems) > 0 {
		return nil, problems
	}
	return &List{b}, nil
}

// Eval evaluates the expression with vars and returns the list's elements
// as JSON documents, in order. It fails with an *EvalError for an
// evaluation error or a value that is not a list, and, without
// evaluating further, for a list of more than maxElements elements
// (maxElements <= 0: no bound).
func (l *List) Eval(vars Vars, maxElements int) ([]json.RawMessage, error) {
	out, err := l.eval(vars)
	if err != nil {
		return nil, err
	}
	doc, err := toJSON(out)
	if err != nil {
		return nil, &EvalError{Path: l.path, Message: err.Error()}
	}
	elems, ok := doc.([]any)
	switch {
	case !ok:
		return nil, &EvalError{Path: l.path, Message: "forEach must yield a list, not " + out.Type().TypeName()}
	case maxElements > 0 && len(elems) > maxElements:
		return nil, &EvalError{Path: l.path,
			Message: fmt.Sprintf("the list has %d elements, more than the limit of %d", len(elems), maxElements)}
	}
	items := make([]json.RawMessage, len(elems))
	for i, e := range elems {
		if items[i], err = json.Marshal(e); err != nil {
			return nil, fmt.Errorf("expr: encode element %d: %w", i, err)
		}
	}
	return items, nil
}

// listy says why t may not be a forEach's type, unless it is a list or a
// type known only at run time.
func listy(t *cel.Type) string {
	switch t.Kind() {
	case cel.ListType(cel.DynType).Kind(), cel.DynType.Kind(), cel.AnyType.Kind():
		return ""
	default:
		return "forEach must yield a list, not " + t.String()
	}
}
