package expr_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/plan/expr"
)

func TestList(t *testing.T) {
	t.Parallel()
	l, problems := expr.CompileList("steps.fetch.output.items.map(i, i.sku)", "forEach", scope, expr.Limits{})
	require.Empty(t, problems)
	got, err := l.Eval(vars, 2)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.JSONEq(t, `"a"`, string(got[0]))
	require.JSONEq(t, `"b"`, string(got[1]))

	_, err = l.Eval(vars, 1)
	require.ErrorIs(t, err, expr.ErrEval)
	require.ErrorContains(t, err, "the list has 2 elements, more than the limit of 1")

	_, problems = expr.CompileList("'text'", "forEach", scope, expr.Limits{})
	require.Len(t, problems, 1)
	require.Contains(t, problems[0].Message, "forEach must yield a list, not string")

	l, problems = expr.CompileList("input.customer", "forEach", scope, expr.Limits{})
	require.Empty(t, problems, "a type known only at run time is checked then")
	_, err = l.Eval(vars, 0)
	require.ErrorContains(t, err, "forEach must yield a list, not map")
}
