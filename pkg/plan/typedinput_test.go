package plan

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/plan/expr"
)

// typedPlan is a plan whose step a reads input.<name> in expr, with the
// input schema schema ("" for none).
func typedPlan(schema, input, cond string) *Plan {
	p := &Plan{PlanID: "p", PlanVersion: "1", Steps: []Step{{ID: "a", Activity: "echo", Input: json.RawMessage(input), If: cond}}}
	if schema != "" {
		p.InputSchema = json.RawMessage(schema)
	}
	return p
}

const typesSchema = `{"type":"object","properties":{"total":{"type":"number"},"count":{"type":"integer"},
	"name":{"type":"string"},"ok":{"type":"boolean"},"tags":{"type":"array"},"meta":{"type":"object"},
	"either":{"type":["string","null"]},"order-lines":{"type":"string"}}}`

// Where the schema types a property, an expression that misuses it is
// refused at submission; without the schema the same plan is accepted,
// as it always was, and fails only when it runs.
func TestTypedInputCatchesTypeMistakes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ input, cond string }{
		{`{"x":"${{ input.total + \"a\" }}"}`, ""},
		{`{"x":"${{ input.count + 1.5 }}"}`, ""},
		{`{"x":"${{ input.name * 2 }}"}`, ""},
		{`{"x":"${{ input.tags + 1 }}"}`, ""},
		{`{"x":"${{ input.meta - 1 }}"}`, ""},
		{``, `input.name`},
		{`{"x":"text ${{ input.tags }}"}`, ""},
	} {
		_, err := typedPlan(typesSchema, c.input, c.cond).Validated(Limits{})
		p := requireProblem(t, err, CodeInvalidExpression, "a")
		require.Regexp(t, `no matching overload|must yield`, p.Message, c)

		_, err = typedPlan("", c.input, c.cond).Validated(Limits{})
		require.NoError(t, err, "without a schema: %v", c)
	}
}

// What the schema leaves open stays open: untyped, typed as several
// types, not an identifier, read by index or has(), or absent.
func TestTypedInputLeavesTheRestDynamic(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ input, cond string }{
		{`{"x":"${{ input.either + 1 }}"}`, ""},
		{`{"x":"${{ input[\"order-lines\"] + 1 }}"}`, ""},
		{`{"x":"${{ input.other + 1 }}"}`, ""},
		{`{"x":"${{ input[\"total\"] + \"a\" }}"}`, ""},
		{``, `has(input.total)`},
		{`{"x":"${{ input.total + 1.5 }}","n":"${{ input.count + 1 }}","s":"${{ input.name + \"!\" }}"}`, `input.ok && size(input.tags) > 0 && input.meta.k == 1`},
	} {
		_, err := typedPlan(typesSchema, c.input, c.cond).Validated(Limits{})
		require.NoError(t, err, "%v", c)
	}
}

// At run time input.<name> reads the input's member as its declared type:
// a whole number is a double where the schema says number, and a
// property that is absent fails as it does untyped.
func TestTypedInputEvaluates(t *testing.T) {
	t.Parallel()
	p := typedPlan(typesSchema, `{"double":"${{ input.total * 2.0 }}","next":"${{ input.count + 1 }}","name":"${{ input.name }}"}`,
		`input.total > 2.5`)
	_, err := p.Validated(Limits{})
	require.NoError(t, err)
	tpl, err := p.InputTemplate("a", expr.Limits{})
	require.NoError(t, err)
	out, err := tpl.Eval(expr.Vars{Input: json.RawMessage(`{"total":3,"count":4.0,"name":"ada"}`)})
	require.NoError(t, err)
	require.JSONEq(t, `{"double":6,"next":5,"name":"ada"}`, string(out))

	cond, err := p.Condition("a", expr.Limits{})
	require.NoError(t, err)
	ok, err := cond.Eval(expr.Vars{Input: json.RawMessage(`{"total":3}`)})
	require.NoError(t, err)
	require.True(t, ok)

	_, err = tpl.Eval(expr.Vars{Input: json.RawMessage(`{"count":1,"name":"x"}`)})
	var ee *expr.EvalError
	require.ErrorAs(t, err, &ee)
	require.Contains(t, ee.Message, "no such key: total")
}

// The plan's output reads the input's types too.
func TestTypedInputInOutput(t *testing.T) {
	t.Parallel()
	p := typedPlan(typesSchema, "", "")
	p.Output = `input.total + "a"`
	_, err := p.Validated(Limits{})
	p2 := requireProblem(t, err, CodeInvalidExpression, "")
	require.Equal(t, "output", p2.Field)
}
