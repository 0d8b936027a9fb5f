package expr

import (
	"slices"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
)

// refsOK checks that every step the expression names, as steps.<id> or
// steps["<id>"], is an ancestor of the step, and records a problem for
// the first that is not. Only the ancestors' results are bound at
// evaluation, so the check is for a clear error at submission: a step
// could not read another's result without it either.
func (c *compiler) refsOK(path string, ast *cel.Ast) bool {
	native := ast.NativeRep()
	ok := true
	// bad records a problem at the node id, shifted by skip columns.
	bad := func(id int64, skip int, format string, args ...any) {
		if ok {
			c.add(path, native.SourceInfo().GetStartLocation(id).Column()+1+skip, format, args...)
			ok = false
		}
	}
	celast.PreOrderVisit(native.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.SelectKind:
			if sel := e.AsSelect(); isSteps(sel.Operand()) {
				c.checkStep(sel.FieldName(), e.ID(), 1, bad) // a select is located at its '.'
			}
		case celast.CallKind:
			call := e.AsCall()
			fn, args := call.FunctionName(), call.Args()
			if (fn != operators.Index && fn != operators.OptIndex && fn != operators.OptSelect) || len(args) != 2 || !isSteps(args[0]) {
				return
			}
			if id, isString := stringLiteral(args[1]); isString {
				c.checkStep(id, args[1].ID(), 0, bad)
			} else {
				bad(e.ID(), 1, "steps must be indexed with a step id in quotes, as steps[\"<id>\"]")
			}
		default:
		}
	}))
	return ok
}

// checkStep reports id through bad unless it is an ancestor.
func (c *compiler) checkStep(id string, at int64, skip int, bad func(int64, int, string, ...any)) {
	if !slices.Contains(c.scope.Ancestors, id) {
		bad(at, skip, "step %q is not a step this one depends on, directly or not: only their results can be read", id)
	}
}

// isSteps reports whether e is the variable steps.
func isSteps(e celast.Expr) bool { return e.Kind() == celast.IdentKind && e.AsIdent() == varSteps }

// stringLiteral returns e's value when it is a string literal.
func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}
