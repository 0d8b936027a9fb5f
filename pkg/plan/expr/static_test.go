package expr_test

import (
	"encoding/json"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/plan/expr"
)

// An expression that reads no variable costs the same in every run: one
// over the cost budget is refused at compilation, in every kind of
// expression, and one exactly at it compiles and evaluates.
// lists.range(10) costs 21; the exists stops at its first element after
// 1,021, though CEL's static estimate says at least 5,012.
func TestConstantCostIsCheckedAtCompilation(t *testing.T) {
	t.Parallel()
	for src, cost := range map[string]uint64{
		`lists.range(10)`:                     21,
		`lists.range(1000).exists(x, x == 0)`: 1021,
	} {
		doc := json.RawMessage(`"${{ ` + src + ` }}"`)
		tpl, problems := expr.Compile(doc, "input", scope, expr.Limits{CostBudget: cost})
		require.Empty(t, problems, "%s at its budget", src)
		_, err := tpl.Eval(vars)
		require.NoError(t, err, src)
		_, problems = expr.CompileValue(src, "output", scope, expr.Limits{CostBudget: cost})
		require.Empty(t, problems, src)

		over := expr.Limits{CostBudget: cost - 1}
		_, problems = expr.Compile(doc, "input", scope, over)
		requireCostProblem(t, problems, "input", cost-1)
		_, problems = expr.CompileValue(src, "output", scope, over)
		requireCostProblem(t, problems, "output", cost-1)
	}
	_, problems := expr.CompileList(`lists.range(10)`, "forEach", scope, expr.Limits{CostBudget: 20})
	requireCostProblem(t, problems, "forEach", 20)
	_, problems = expr.CompileCondition(`size(lists.range(10)) == 10`, "if", scope, expr.Limits{CostBudget: 20})
	requireCostProblem(t, problems, "if", 20)
	_, problems = expr.CompileVarValue("event", `lists.range(10)`, "input", expr.Limits{CostBudget: 20})
	requireCostProblem(t, problems, "input", 20)
}

// An expression that reads a variable is not judged at compilation, even
// when its constant part alone is over the budget: its cost is known
// only when it is evaluated. A comprehension variable named as a
// variable counts as a read.
func TestVariableCostIsCheckedAtEvaluation(t *testing.T) {
	t.Parallel()
	for _, src := range []string{`lists.range(10) + [input.count]`, `[1, 2].map(input, input)`} {
		v, problems := expr.CompileValue(src, "output", scope, expr.Limits{CostBudget: 1})
		require.Empty(t, problems, src)
		_, err := v.Eval(vars)
		require.ErrorContains(t, err, "cost limit exceeded", src)
	}
}

func requireCostProblem(t *testing.T, problems []expr.Problem, path string, budget uint64) {
	t.Helper()
	require.Len(t, problems, 1)
	require.Equal(t, path, problems[0].Path)
	require.Equal(t, "the expression reads no variable, so it costs the same in every run, and that is more than the cost budget of "+
		strconv.FormatUint(budget, 10), problems[0].Message)
}

// InputPath names the path of the run's input a list reads and nothing
// else; anything computed is not a path.
func TestListInputPath(t *testing.T) {
	t.Parallel()
	for src, want := range map[string][]string{
		`input.orders`:              {"orders"},
		`${{ input.orders.lines }}`: {"orders", "lines"},
		`input["order-lines"]`:      {"order-lines"},
		`input`:                     nil,
	} {
		l, problems := expr.CompileList(src, "forEach", scope, expr.Limits{})
		require.Empty(t, problems, src)
		keys, ok := l.InputPath()
		require.True(t, ok, src)
		require.Equal(t, want, keys, src)
	}
	for _, src := range []string{
		`input.orders.filter(o, o.qty > 0)`, `input[0]`, `input.?orders.orValue([])`,
		`steps.fetch.output.rows`, `[input.count]`, `lists.range(3)`,
	} {
		l, problems := expr.CompileList(src, "forEach", scope, expr.Limits{})
		require.Empty(t, problems, src)
		_, ok := l.InputPath()
		require.False(t, ok, src)
	}
}

// Constant gives the list of an expression that reads no variable, as
// Eval would, and nothing for one that reads a variable.
func TestListConstant(t *testing.T) {
	t.Parallel()
	l, problems := expr.CompileList(`${{ lists.range(3).map(i, {'n': i}) }}`, "forEach", scope, expr.Limits{})
	require.Empty(t, problems)
	items, ok := l.Constant()
	require.True(t, ok)
	require.Equal(t, []json.RawMessage{json.RawMessage(`{"n":0}`), json.RawMessage(`{"n":1}`), json.RawMessage(`{"n":2}`)}, items)
	for _, src := range []string{`[1, input.count]`, `input.orders`, `steps.fetch.output.rows`} {
		l, problems := expr.CompileList(src, "forEach", scope, expr.Limits{})
		require.Empty(t, problems, src)
		_, ok := l.Constant()
		require.False(t, ok, src)
	}
}

// InputPath and Constant are safe for concurrent use (run under -race),
// alongside compilations in the same environment.
func TestListFactsConcurrently(t *testing.T) {
	t.Parallel()
	path, _ := expr.CompileList(`input.orders`, "forEach", scope, expr.Limits{})
	constant, _ := expr.CompileList(`lists.range(2)`, "forEach", scope, expr.Limits{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			keys, ok := path.InputPath()
			require.True(t, ok)
			require.Equal(t, []string{"orders"}, keys)
			items, ok := constant.Constant()
			require.True(t, ok)
			require.Len(t, items, 2)
			_, problems := expr.CompileList(`lists.range(`+strconv.Itoa(i)+`).map(x, x + input.count)`, "forEach", scope, expr.Limits{})
			require.Empty(t, problems)
		})
	}
	wg.Wait()
}
