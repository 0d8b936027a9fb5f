package expr

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/interpreter"
)

// What compilation can know of an expression's evaluation without its
// variables. An expression that reads no variable of its environment
// (a constant expression: "${{ lists.range(20000) }}") gives the same
// value, at the same cost, in every run, since nothing but its variables
// can differ between evaluations. Compilation evaluates it once, within
// the cost budget, and refuses one that exceeds the budget: it would fail
// every run that reaches it.
//
// An expression that reads a variable is not judged by CEL's static cost
// estimate: its lower bound is not a bound. It counts every iteration of
// exists and all, which stop at their first match, and the lists
// extension estimates sort above what it costs on a short list, so
// refusing on it would refuse expressions that run within their budget.
// Their cost is known only when they are evaluated.

// readsNoVariable reports whether expression e, compiled in env, reads
// none of env's variables. An identifier that shares a variable's name
// counts as a read, even where a comprehension's own variable shadows it,
// so the answer errs towards false.
func readsNoVariable(env *cel.Env, e celast.Expr) bool {
	vars := make([]string, 0, len(env.Variables()))
	for _, v := range env.Variables() {
		vars = append(vars, v.Name())
	}
	none := true
	celast.PreOrderVisit(e, celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.IdentKind {
			return
		}
		name := e.AsIdent()
		if slices.ContainsFunc(vars, func(v string) bool { return name == v || strings.HasPrefix(name, v+".") }) {
			none = false
		}
	}))
	return none
}

// constantCostProblem returns why prg, the program of the checked
// expression ast, cannot be evaluated within budget in any run, or "":
// only for an expression that reads no variable, evaluated here once.
func constantCostProblem(env *cel.Env, ast *cel.Ast, prg cel.Program, budget uint64) string {
	if !readsNoVariable(env, ast.NativeRep().Expr()) {
		return ""
	}
	_, _, err := prg.Eval(cel.NoVars())
	if cancelled, ok := errors.AsType[interpreter.EvalCancelledError](err); !ok || cancelled.Cause != interpreter.CostLimitExceeded {
		return ""
	}
	return fmt.Sprintf("the expression reads no variable, so it costs the same in every run, and that is more than the cost budget of %d", budget)
}

// InputPath returns the keys of the path of the run's input the list's
// expression reads and nothing else ("input.orders.lines" or
// input["order-lines"]: ["orders", "lines"]; "input": none), and true; or
// nil and false for any other expression. At a run's start, with the
// input known, the list's length is then known too.
func (l *List) InputPath() ([]string, bool) {
	parsed, iss := l.env.Parse(l.src)
	if iss != nil && iss.Err() != nil {
		return nil, false
	}
	var keys []string
	for e := parsed.NativeRep().Expr(); ; {
		switch e.Kind() {
		case celast.IdentKind:
			if e.AsIdent() != varInput {
				return nil, false
			}
			slices.Reverse(keys)
			return keys, true
		case celast.SelectKind:
			sel := e.AsSelect()
			if sel.IsTestOnly() {
				return nil, false
			}
			keys, e = append(keys, sel.FieldName()), sel.Operand()
		case celast.CallKind:
			call := e.AsCall()
			args := call.Args()
			if call.FunctionName() != operators.Index || len(args) != 2 {
				return nil, false
			}
			key, ok := stringLiteral(args[1])
			if !ok {
				return nil, false
			}
			keys, e = append(keys, key), args[0]
		default:
			return nil, false
		}
	}
}

// Constant returns the list the expression yields when it reads no
// variable, the same in every run, as Eval returns it (without a bound on
// its elements), and true; or nil and false when it reads a variable or
// does not evaluate to a list.
func (l *List) Constant() ([]json.RawMessage, bool) {
	parsed, iss := l.env.Parse(l.src)
	if iss != nil && iss.Err() != nil || !readsNoVariable(l.env, parsed.NativeRep().Expr()) {
		return nil, false
	}
	items, err := l.Eval(Vars{}, 0)
	if err != nil {
		return nil, false
	}
	return items, true
}
