package expr_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/plan/expr"
)

const event = `{"id": "evt-1", "triggerId": "orders", "payload": {"order": {"id": 4711, "lines": [{"sku": "tea"}]}}}`

func TestVarValueEvaluatesOverItsVariable(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		`event.payload.order`: `{"id": 4711, "lines": [{"sku": "tea"}]}`,
		`${{ {"order": event.payload.order.id + 1, "from": event.triggerId} }}`: `{"order": 4712, "from": "orders"}`,
		` event.payload.order.lines.map(l, l.sku) `:                             `["tea"]`,
		`event.?payload.missing.orValue("none")`:                                `"none"`,
		`event.id.upperAscii()`:                                                 `"EVT-1"`,
	} {
		v, problems := expr.CompileVarValue("event", src, "input", expr.Limits{})
		require.Empty(t, problems, src)
		got, err := v.Eval(json.RawMessage(event))
		require.NoError(t, err, src)
		require.JSONEq(t, want, string(got), src)
	}
	v, problems := expr.CompileVarValue("event", "event", "input", expr.Limits{})
	require.Empty(t, problems)
	got, err := v.Eval(nil)
	require.NoError(t, err)
	require.JSONEq(t, `null`, string(got), "empty is null")
}

// The variable is the only one: the plan's variables are not declared,
// and a plan expression of the same source is not answered for it from
// the cache.
func TestVarValueCompileProblems(t *testing.T) {
	t.Parallel()
	_, problems := expr.Compile(json.RawMessage(`"${{ input.x }}"`), "input", expr.Scope{}, expr.Limits{})
	require.Empty(t, problems)
	for _, c := range []struct {
		src     string
		column  int
		message string
	}{
		{`input.x`, 1, "undeclared reference to 'input'"},
		{`event.payload.`, 15, "Syntax error"},
		{`steps.a.output`, 1, "undeclared reference to 'steps'"},
		{`${{ }}`, 0, "an empty expression"},
		{`  `, 0, "an empty expression"},
		{`${{ event.id`, 0, "is not closed with }}"},
	} {
		_, problems := expr.CompileVarValue("event", c.src, "input", expr.Limits{})
		require.Len(t, problems, 1, c.src)
		require.Equal(t, "input", problems[0].Path, c.src)
		require.Equal(t, c.column, problems[0].Column, c.src)
		require.Contains(t, problems[0].Message, c.message, c.src)
	}
	_, problems = expr.CompileVarValue("event", "event.payload.abc", "input", expr.Limits{MaxExpressionBytes: 16})
	require.Len(t, problems, 1)
	require.Contains(t, problems[0].Message, "17 bytes, over the limit of 16")
}

func TestVarValueEvalErrors(t *testing.T) {
	t.Parallel()
	for src, message := range map[string]string{
		`event.payload.nope`:           "no such key: nope",
		`event.payload.order.id + "x"`: "no such overload",
		`1.0 / 0.0`:                    "has no JSON form",
		`[1,2,3,4,5,6,7,8,9,10].map(x, [1,2,3,4,5,6,7,8,9,10].map(y, x * y * event.payload.order.id))`: "cost limit exceeded",
	} {
		v, problems := expr.CompileVarValue("event", src, "input", expr.Limits{CostBudget: 50})
		require.Empty(t, problems, src)
		_, err := v.Eval(json.RawMessage(event))
		require.ErrorIs(t, err, expr.ErrEval, src)
		var ee *expr.EvalError
		require.ErrorAs(t, err, &ee, src)
		require.Equal(t, "input", ee.Path, src)
		require.Contains(t, ee.Message, message, src)
	}
}
