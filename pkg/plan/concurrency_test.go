package plan

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/plan/expr"
)

func concurrencyPlan(limits ...string) string {
	doc := `{"planId":"orders","planVersion":"1","steps":[{"id":"a","activity":"x"}],"concurrency":[`
	for i, l := range limits {
		if i > 0 {
			doc += ","
		}
		doc += l
	}
	return doc + `]}`
}

func TestConcurrencyParsesWithDefaults(t *testing.T) {
	v, err := ParseValidated([]byte(concurrencyPlan(
		`{"key":"input.customerId","limit":2}`,
		`{"key":"'all'","limit":"input.tier == 'premium' ? 10 : 1","strategy":"GROUP_ROUND_ROBIN"}`)), Limits{})
	require.NoError(t, err)
	var p Plan
	require.NoError(t, json.Unmarshal(v.JSON(), &p))
	require.Equal(t, SchemaVersionFlowControl, p.SchemaVersion)
	require.Equal(t, []Concurrency{
		{Key: "input.customerId", Limit: Count{N: 2}, Strategy: StrategyQueue},
		{Key: "'all'", Limit: Count{Expr: "input.tier == 'premium' ? 10 : 1"}, Strategy: StrategyGroupRoundRobin},
	}, p.Concurrency)

	keys, problems := v.RunKeys(expr.Vars{Input: json.RawMessage(`{"customerId":"42","tier":"premium"}`)})
	require.Empty(t, problems)
	require.Equal(t, []RunKey{
		{Index: 0, Value: "42", Limit: 2, Strategy: StrategyQueue, Weight: 1},
		{Index: 1, Value: "all", Limit: 10, Strategy: StrategyGroupRoundRobin, Group: "all", Weight: 1},
	}, keys)
}

func TestConcurrencyProblems(t *testing.T) {
	cases := map[string]struct{ limit, field, code string }{
		"no key":              {`{"limit":1}`, "concurrency[0].key", CodeMissingField},
		"limit zero":          {`{"key":"'a'","limit":0}`, "concurrency[0].limit", CodeInvalidConcurrency},
		"limit missing":       {`{"key":"'a'"}`, "concurrency[0].limit", CodeInvalidConcurrency},
		"limit over the max":  {`{"key":"'a'","limit":10001}`, "concurrency[0].limit", CodeInvalidConcurrency},
		"unknown strategy":    {`{"key":"'a'","limit":1,"strategy":"LIFO"}`, "concurrency[0].strategy", CodeInvalidConcurrency},
		"key does not parse":  {`{"key":"input.(","limit":1}`, "concurrency[0].key", CodeInvalidExpression},
		"limit reads a step":  {`{"key":"'a'","limit":"steps.a.output"}`, "concurrency[0].limit", CodeInvalidExpression},
		"limit is a fraction": {`{"key":"'a'","limit":1.5}`, "concurrency[0].limit", CodeMalformed},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseValidated([]byte(concurrencyPlan(c.limit)), Limits{})
			p := requireProblem(t, err, c.code, "")
			require.Equal(t, c.field, p.Field)
		})
	}
}

func TestConcurrencyLimitsAtTheirEdges(t *testing.T) {
	_, err := ParseValidated([]byte(concurrencyPlan(`{"key":"'a'","limit":10000}`)), Limits{})
	require.NoError(t, err, "a limit of MaxConcurrencyLimit")
	four := `{"key":"'a'","limit":1}`
	_, err = ParseValidated([]byte(concurrencyPlan(four, four, four, four)), Limits{})
	require.NoError(t, err, "MaxConcurrencyLimits limits")
	_, err = ParseValidated([]byte(concurrencyPlan(four, four, four, four, four)), Limits{})
	require.Equal(t, "concurrency", requireProblem(t, err, CodeInvalidConcurrency, "").Field)

	var p Plan
	require.NoError(t, json.Unmarshal([]byte(concurrencyPlan(four)), &p))
	p.SchemaVersion = SchemaVersionSubPlans
	require.Equal(t, "concurrency", requireProblem(t, p.Validate(Limits{}), CodeFieldNotAllowed, "").Field)
}

func TestRunKeysRefuseWhatTheInputMakesOfThem(t *testing.T) {
	v, err := ParseValidated([]byte(concurrencyPlan(`{"key":"input.customerId","limit":"input.n"}`)), Limits{})
	require.NoError(t, err)
	cases := map[string]struct{ input, field, says string }{
		"a number key":        {`{"customerId":42,"n":1}`, "concurrency[0].key", "the number 42"},
		"a missing key":       {`{"n":1}`, "concurrency[0].key", "no such key"},
		"a key too long":      {"", "concurrency[0].key", "at most 256"},
		"a limit of 0":        {`{"customerId":"a","n":0}`, "concurrency[0].limit", "1 to 10000"},
		"a limit over max":    {`{"customerId":"a","n":10001}`, "concurrency[0].limit", "1 to 10000"},
		"a limit not a count": {`{"customerId":"a","n":"ten"}`, "concurrency[0].limit", "a string"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := c.input
			if name == "a key too long" {
				long := make([]byte, 257)
				for i := range long {
					long[i] = 'k'
				}
				in = `{"customerId":"` + string(long) + `","n":1}`
			}
			keys, problems := v.RunKeys(expr.Vars{Input: json.RawMessage(in)})
			require.Nil(t, keys)
			require.Len(t, problems, 1)
			require.Equal(t, c.field, problems[0].Field)
			require.Equal(t, CodeInvalidConcurrency, problems[0].Code)
			require.Contains(t, problems[0].Message, c.says)
		})
	}
	keys, problems := v.RunKeys(expr.Vars{Input: json.RawMessage(`{"customerId":"a","n":10000}`)})
	require.Empty(t, problems)
	require.Equal(t, 10000, keys[0].Limit)
}

func TestFairness(t *testing.T) {
	doc := `{"planId":"orders","planVersion":"1","steps":[{"id":"a","activity":"x"}],
		"concurrency":[{"key":"'all'","limit":2}],"fairness":{"key":"input.customer","weight":"input.tier == 'gold' ? 3 : 1"}}`
	v, err := ParseValidated([]byte(doc), Limits{})
	require.NoError(t, err)
	keys, problems := v.RunKeys(expr.Vars{Input: json.RawMessage(`{"customer":"c1","tier":"gold"}`), Run: expr.RunVars{TenantID: "acme"}})
	require.Empty(t, problems)
	require.Equal(t, "c1", keys[0].Group)
	require.Equal(t, 3, keys[0].Weight)

	_, problems = v.RunKeys(expr.Vars{Input: json.RawMessage(`{"customer":7}`)})
	require.Equal(t, "fairness.key", problems[0].Field)

	plain, err := ParseValidated([]byte(concurrencyPlan(`{"key":"'all'","limit":2}`)), Limits{})
	require.NoError(t, err)
	keys, _ = plain.RunKeys(expr.Vars{Run: expr.RunVars{TenantID: "acme"}})
	require.Equal(t, "acme", keys[0].Group, "the tenant by default")
	require.Equal(t, 1, keys[0].Weight)

	for weight, ok := range map[string]bool{"0": true, "1": true, "100": true, "101": false, "-1": false} {
		_, err := ParseValidated([]byte(`{"planId":"o","planVersion":"1","steps":[{"id":"a","activity":"x"}],
			"concurrency":[{"key":"'all'","limit":2}],"fairness":{"weight":`+weight+`}}`), Limits{})
		if ok {
			require.NoError(t, err, weight)
		} else {
			require.Equal(t, "fairness.weight", requireProblem(t, err, CodeInvalidConcurrency, "").Field, weight)
		}
	}
	_, err = ParseValidated([]byte(`{"planId":"o","planVersion":"1","steps":[{"id":"a","activity":"x"}],"fairness":{"key":"input.c"}}`), Limits{})
	require.Equal(t, "fairness", requireProblem(t, err, CodeFieldNotAllowed, "").Field, "fairness without a limit")
}
