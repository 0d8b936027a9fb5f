package expr_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/plan/expr"
)

var scope = expr.Scope{Ancestors: []string{"fetch", "price-check"}}

var vars = expr.Vars{
	Input: json.RawMessage(`{"customer": {"name": "Ada", "tier": "gold"}, "count": 2, "ratio": 0.5, "big": 9007199254740993}`),
	Steps: map[string]expr.StepVars{
		"fetch":       {Status: "SUCCESS", Completed: true, Output: json.RawMessage(`{"items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 3}]}`), Artifacts: json.RawMessage(`[]`)},
		"price-check": {Status: "SKIPPED"},
	},
	Run: expr.RunVars{ID: "run-1", PlanID: "orders", PlanVersion: "3", TenantID: "acme", ProjectID: "p", EnvironmentID: "prod"},
}

func eval(t *testing.T, doc string, s expr.Scope, v expr.Vars) (string, error) {
	t.Helper()
	tpl, problems := expr.Compile(json.RawMessage(doc), "input", s, expr.Limits{})
	require.Empty(t, problems)
	out, err := tpl.Eval(v)
	return string(out), err
}

func TestEvalReplacesWholeStringsAndInterpolates(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]string{
		`{"who": "${{ input.customer }}"}`:                                                                   `{"who": {"name": "Ada", "tier": "gold"}}`,
		`{"n": "${{ input.count + 1 }}", "r": "${{input.ratio * 2.0}}"}`:                                     `{"n": 3, "r": 1}`,
		`{"big": "${{ input.big }}"}`:                                                                        `{"big": 9007199254740993}`,
		`{"skus": "${{ steps.fetch.output.items.map(i, i.sku) }}"}`:                                          `{"skus": ["a", "b"]}`,
		`{"total": "${{ steps[\"fetch\"].output.items.map(i, i.qty)[1] + 1 }}"}`:                             `{"total": 4}`,
		`{"msg": "Dear ${{ input.customer.name }}, ${{ input.count }} items (${{ input.count > 1 }})"}`:      `{"msg": "Dear Ada, 2 items (true)"}`,
		`{"where": "${{ run.tenantId }}/${{ run.environmentId }}/${{ run.id }}"}`:                            `{"where": "acme/prod/run-1"}`,
		`{"skipped": "${{ steps[\"price-check\"].status }}", "has": "${{ has(steps.fetch.output.items) }}"}`: `{"skipped": "SKIPPED", "has": true}`,
		`{"static": [1, "two", {"three": null}], "x": "${{ null }}"}`:                                        `{"static": [1, "two", {"three": null}], "x": null}`,
		`"${{ input.customer.name.upperAscii() }}"`:                                                          `"ADA"`,
	} {
		got, err := eval(t, doc, scope, vars)
		require.NoError(t, err, doc)
		require.JSONEq(t, want, got, doc)
	}
}

func TestNoExpressionsIsNoTemplateWork(t *testing.T) {
	t.Parallel()
	tpl, problems := expr.Compile(json.RawMessage(`{"a": "plain $ { text }", "b": [1]}`), "input", scope, expr.Limits{})
	require.Empty(t, problems)
	require.False(t, tpl.HasExpressions())
	tpl, problems = expr.Compile(json.RawMessage(`"${{ 1 }}"`), "input", scope, expr.Limits{})
	require.Empty(t, problems)
	require.True(t, tpl.HasExpressions())
}

func TestEvalIsDeterministic(t *testing.T) {
	t.Parallel()
	doc := `{"z": "${{ {'b': 1, 'a': [input.customer, steps.fetch.output]} }}", "a": 1}`
	first, err := eval(t, doc, scope, vars)
	require.NoError(t, err)
	for range 20 {
		again, err := eval(t, doc, scope, vars)
		require.NoError(t, err)
		require.Equal(t, first, again, "the same bytes every time: replay records them")
	}
}

func TestCompileProblems(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		doc, path string
		column    int
		message   string
		scope     expr.Scope
	}{
		{`{"a": "${{ input. }}"}`, "input.a", 7, "Syntax error", scope},
		{`{"a": {"b": ["x", "${{ nope + 1 }}"]}}`, "input.a.b[1]", 1, "undeclared reference to 'nope'", scope},
		{`{"a": "${{ steps.other.output }}"}`, "input.a", 7, `step "other" is not a step this one depends on`, scope},
		{`{"a": "${{ steps['other'].output }}"}`, "input.a", 7, `step "other" is not a step this one depends on`, scope},
		{`{"a": "${{ steps[input.name].output }}"}`, "input.a", 7, "indexed with a step id in quotes", scope},
		{`{"a": "${{ item }}"}`, "input.a", 1, "undeclared reference to 'item'", scope},
		{`{"a": "${{ 1 + }}"}`, "input.a", 0, "", scope},
		{`{"a": "${{ input.x"}`, "input.a", 0, "is not closed with }}", scope},
		{`{"a": "${{ }}"}`, "input.a", 0, "an empty expression", scope},
		{`{"a": "n=${{ [1, 2] }}"}`, "input.a", 0, "must yield a string, number or bool", scope},
	} {
		_, problems := expr.Compile(json.RawMessage(c.doc), "input", c.scope, expr.Limits{})
		require.Len(t, problems, 1, c.doc)
		p := problems[0]
		require.Equal(t, c.path, p.Path, c.doc)
		if c.column > 0 {
			require.Equal(t, c.column, p.Column, c.doc)
		}
		require.Contains(t, p.Message, c.message, c.doc)
	}
}

func TestForEachScope(t *testing.T) {
	t.Parallel()
	v := vars
	v.Item, v.Index = json.RawMessage(`{"sku": "b"}`), 1
	got, err := eval(t, `{"sku": "${{ item.sku }}", "i": "${{ index }}"}`, expr.Scope{ForEach: true}, v)
	require.NoError(t, err)
	require.JSONEq(t, `{"sku": "b", "i": 1}`, got)
}

func TestExpressionLengthLimit(t *testing.T) {
	t.Parallel()
	lim := expr.Limits{MaxExpressionBytes: 16}
	at := strings.Repeat("1+", 7) + "10" // 16 bytes
	_, problems := expr.Compile(json.RawMessage(`"${{ `+at+` }}"`), "input", scope, lim)
	require.Empty(t, problems, "an expression exactly at the limit compiles")
	_, problems = expr.Compile(json.RawMessage(`"${{ `+at+`0 }}"`), "input", scope, lim)
	require.Len(t, problems, 1)
	require.Contains(t, problems[0].Message, "17 bytes, over the limit of 16")
}

func TestEvalErrors(t *testing.T) {
	t.Parallel()
	for doc, message := range map[string]string{
		`{"a": "${{ input.missing }}"}`:                 "no such key: missing",
		`{"a": "${{ input.customer.name + 1 }}"}`:       "no such overload",
		`{"a": "${{ steps[\"price-check\"].output }}"}`: "no such key: output",
		`{"a": "${{ 1.0 / 0.0 }}"}`:                     "has no JSON form",
		`{"a": "x${{ input.customer }}"}`:               "must yield a string, number or bool",
		`{"a": "${{ {1: 2} }}"}`:                        "JSON object keys are strings",
	} {
		_, err := eval(t, doc, scope, vars)
		require.ErrorIs(t, err, expr.ErrEval, doc)
		var ee *expr.EvalError
		require.ErrorAs(t, err, &ee, doc)
		require.Equal(t, "input.a", ee.Path, doc)
		require.Contains(t, ee.Message, message, doc)
	}
}

// The cost budget stops an expression that would do too much work; one
// within it evaluates. (It reads a variable: one that does not is refused
// at compilation, TestConstantCostIsCheckedAtCompilation.)
func TestCostBudget(t *testing.T) {
	t.Parallel()
	doc := json.RawMessage(`"${{ [1,2,3,4,5,6,7,8,9,10].map(x, [1,2,3,4,5,6,7,8,9,10].map(y, x * y * input.count)) }}"`)
	tpl, problems := expr.Compile(doc, "input", scope, expr.Limits{CostBudget: 1_000_000})
	require.Empty(t, problems)
	_, err := tpl.Eval(vars)
	require.NoError(t, err)
	tpl, problems = expr.Compile(doc, "input", scope, expr.Limits{CostBudget: 50})
	require.Empty(t, problems)
	_, err = tpl.Eval(vars)
	require.ErrorIs(t, err, expr.ErrEval)
	require.Contains(t, err.Error(), "cost limit exceeded")
}
