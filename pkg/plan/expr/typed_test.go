package expr_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/plan/expr"
)

// The same source compiles by the scope's input types, whatever was
// compiled (and cached) before in another scope.
func TestInputTypesAreThePartOfTheScope(t *testing.T) {
	t.Parallel()
	const src = `{"x":"${{ input.total + \"a\" }}"}`
	typed := expr.Scope{InputTypes: map[string]string{"total": "number"}}
	for range 2 {
		_, problems := expr.Compile(json.RawMessage(src), "input", typed, expr.Limits{})
		require.Len(t, problems, 1)
		require.Contains(t, problems[0].Message, "(double, string)")

		tpl, problems := expr.Compile(json.RawMessage(src), "input", expr.Scope{}, expr.Limits{})
		require.Empty(t, problems)
		out, err := tpl.Eval(expr.Vars{Input: json.RawMessage(`{"total":"1"}`)})
		require.NoError(t, err)
		require.JSONEq(t, `{"x":"1a"}`, string(out))
	}
	_, problems := expr.Compile(json.RawMessage(src), "input", expr.Scope{InputTypes: map[string]string{"total": "decimal"}}, expr.Limits{})
	require.Empty(t, problems, "a type that is not a JSON Schema type leaves the property dynamic")
	require.False(t, expr.IsInputType("decimal"))
	require.True(t, expr.IsInputType("integer"))
}
