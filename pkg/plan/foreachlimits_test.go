package plan

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// forEachPlan returns a plan whose step "fan" loops over list, with the
// extra fields extra (`,"if":"..."`).
func forEachPlan(list, extra string) []byte {
	l, _ := json.Marshal(list)
	return []byte(`{"planId":"p","planVersion":"1","steps":[{"id":"fan","activity":"echo","forEach":` + string(l) + extra + `}]}`)
}

// A forEach list that reads no variable is the same in every run: one
// over MaxForEachElements elements, or over MaxForEachBytes of JSON, is
// refused at submission; one exactly at either limit is accepted.
func TestConstantForEachListIsBounded(t *testing.T) {
	t.Parallel()
	n := strconv.Itoa(MaxForEachElements)
	_, err := Parse(forEachPlan("lists.range("+n+")", ""), Limits{})
	require.NoError(t, err, "a list of exactly the limit")
	_, err = Parse(forEachPlan("lists.range("+strconv.Itoa(MaxForEachElements+1)+")", ""), Limits{})
	p := requireOnly(t, err, CodeForEachTooLarge)
	require.Equal(t, Problem{StepID: "fan", Field: "forEach", Code: CodeForEachTooLarge,
		Message: "the list reads no variable and has 10001 elements in every run, more than the limit of 10000"}, p)

	// 1,025 strings of 1,020 bytes: 2 + 1,024 commas + 1,025 × 1,022 = 1 MiB.
	byBytes := func(n int) string { return "lists.range(1025).map(i, '" + strings.Repeat("a", n) + "')" }
	_, err = Parse(forEachPlan(byBytes(1020), ""), Limits{})
	require.NoError(t, err, "a list of exactly MaxForEachBytes")
	_, err = Parse(forEachPlan(byBytes(1021), ""), Limits{})
	p = requireOnly(t, err, CodeForEachTooLarge)
	require.Contains(t, p.Message, "is 1049601 bytes of JSON in every run, more than the limit of 1048576")

	_, err = Parse(forEachPlan("input.rows.map(r, lists.range(20000))", ""), Limits{})
	require.NoError(t, err, "a list that reads a variable is bounded when it is evaluated")
}

// An expression that reads no variable and costs more than the cost
// budget is refused at submission; one exactly at it is accepted.
// lists.range(n) costs n + 11.
func TestConstantExpressionOverCostBudgetIsRefused(t *testing.T) {
	t.Parallel()
	doc := func(n int) []byte {
		return []byte(`{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo",
			"input":{"rows":"${{ lists.range(` + strconv.Itoa(n) + `) }}"}}]}`)
	}
	_, err := Parse(doc(99_989), Limits{})
	require.NoError(t, err, "a cost of exactly the budget")
	_, err = Parse(doc(99_990), Limits{})
	p := requireOnly(t, err, CodeInvalidExpression)
	require.Equal(t, "a", p.StepID)
	require.Equal(t, "input.rows", p.Field)
	require.Contains(t, p.Message, "more than the cost budget of 100000")
}

// CheckInput refuses a start whose input gives a forEach list that is a
// path of the input more than MaxForEachElements elements, and nothing
// else: not a list computed from the input, not a step with an if, not
// an absent or non-list value.
func TestCheckInput(t *testing.T) {
	t.Parallel()
	v, err := ParseValidated([]byte(`{"planId":"p","planVersion":"1","steps":[
		{"id":"direct","activity":"echo","forEach":"input.orders"},
		{"id":"quoted","activity":"echo","forEach":"${{ input[\"order-lines\"] }}"},
		{"id":"guarded","activity":"echo","forEach":"input.orders","if":"size(input.orders) <= 10000"},
		{"id":"computed","activity":"echo","forEach":"input.orders.filter(o, o != 1)"}]}`), Limits{})
	require.NoError(t, err)
	input := func(orders, lines int) json.RawMessage {
		list := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]" }
		return json.RawMessage(`{"orders":` + list(orders) + `,"order-lines":` + list(lines) + `}`)
	}
	require.NoError(t, v.CheckInput(input(MaxForEachElements, MaxForEachElements)), "lists of exactly the limit")
	err = v.CheckInput(input(MaxForEachElements+1, 0))
	p := requireOnly(t, err, CodeForEachTooLarge)
	require.Equal(t, Problem{StepID: "direct", Field: "forEach", Code: CodeForEachTooLarge,
		Message: "input.orders has 10001 elements in the run's input, more than the limit of 10000 of a forEach list"}, p)
	err = v.CheckInput(input(0, MaxForEachElements+1))
	p = requireOnly(t, err, CodeForEachTooLarge)
	require.Equal(t, "quoted", p.StepID)
	require.Contains(t, p.Message, `input["order-lines"] has 10001 elements`)

	for _, in := range []string{``, `null`, `{}`, `{"orders":{"a":1},"order-lines":"x"}`, `[1]`, `not json`} {
		require.NoError(t, v.CheckInput(json.RawMessage(in)), in)
	}
	whole, err := ParseValidated(forEachPlan("input", ""), Limits{})
	require.NoError(t, err)
	err = whole.CheckInput(json.RawMessage("[" + strings.TrimSuffix(strings.Repeat("1,", MaxForEachElements+1), ",") + "]"))
	requireProblem(t, err, CodeForEachTooLarge, "fan")
	require.NoError(t, Validated{}.CheckInput(json.RawMessage(`{"orders":[1]}`)), "the zero Validated")
}
