package ui_test

import (
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/plan"
)

// shownProblem is a problem as a page shows it, and as the gateway names
// it without its code.
type shownProblem struct{ Path, Keyword, Message string }

// schemaCases are the browser checker's cases: an inputSchema, an input,
// and the problems the gateway names for them, in its order.
var schemaCases = []struct {
	name, schema, input string
	want                []shownProblem
}{
	{"type", `{"type":"string"}`, `7`, []shownProblem{{"input", "type", "type: got number, want string"}}},
	{"type list, in the validator's order", `{"type":["integer","null"]}`, `1.5`,
		[]shownProblem{{"input", "type", "type: got number, want null or integer"}}},
	{"integer", `{"type":"integer"}`, `2`, nil},
	{"null input", `{"type":"object"}`, `null`, []shownProblem{{"input", "type", "type: got null, want object"}}},
	{"type ends the check", `{"type":"string","minLength":5,"enum":["aaaaa"]}`, `1`,
		[]shownProblem{{"input", "type", "type: got number, want string"}}},
	{"properties, required, additionalProperties false",
		`{"type":"object","required":["a","b"],"properties":{"a":{"type":"boolean"}},"additionalProperties":false}`,
		`{"a":1,"c":2,"d e":3}`, []shownProblem{
			{"input.a", "type", "type: got number, want boolean"},
			{"input.b", "required", "required: required property is missing"},
			{"input.c", "additionalProperties", "additionalProperties: property is not allowed"},
			{`input["d e"]`, "additionalProperties", "additionalProperties: property is not allowed"},
		}},
	{"additionalProperties schema", `{"additionalProperties":{"type":"number"}}`, `{"x":"s","y":1}`,
		[]shownProblem{{"input.x", "type", "type: got string, want number"}}},
	{"a quoted name", `{"required":["a\"b"]}`, `{}`, []shownProblem{{`input["a\"b"]`, "required", "required: required property is missing"}}},
	{"an index-like name of an object", `{"properties":{"0":{"type":"string"}}}`, `{"0":1}`,
		[]shownProblem{{`input["0"]`, "type", "type: got number, want string"}}},
	{"items, maxLength", `{"type":"array","items":{"type":"string","maxLength":2}}`, `["ab","abc",1]`, []shownProblem{
		{"input[1]", "maxLength", "maxLength: got 3, want 2"},
		{"input[2]", "type", "type: got number, want string"},
	}},
	{"minLength counts characters", `{"minLength":3}`, `"é😀"`, []shownProblem{{"input", "minLength", "minLength: got 2, want 3"}}},
	{"enum", `{"enum":["EUR","USD"]}`, `"GBP"`, []shownProblem{{"input", "enum", "enum: value must be one of 'EUR', 'USD'"}}},
	{"enum of one", `{"enum":[3]}`, `4`, []shownProblem{{"input", "enum", "enum: value must be 3"}}},
	{"enum with an object", `{"enum":[{"a":1},2]}`, `{"a":2}`, []shownProblem{{"input", "enum", "enum: enum failed"}}},
	{"enum match", `{"enum":[{"a":[1,2]},"x"]}`, `{"a":[1,2]}`, nil},
	{"const", `{"const":"x"}`, `"y"`, []shownProblem{{"input", "const", "const: value must be 'x'"}}},
	{"const object", `{"const":{"a":1}}`, `{"a":1,"b":2}`, []shownProblem{{"input", "const", "const: const failed"}}},
	{"minimum, maximum", `{"properties":{"lo":{"minimum":0.5},"hi":{"maximum":1000000},"mid":{"maximum":1000},"tiny":{"minimum":0.0001}}}`,
		`{"lo":-1,"hi":1234567,"mid":-1234.5e1,"tiny":0.000015}`, []shownProblem{
			{"input.hi", "maximum", "maximum: got 1.234567×10⁰⁶, want 1×10⁰⁶"},
			{"input.lo", "minimum", "minimum: got -1, want 0.5"},
			{"input.tiny", "minimum", "minimum: got 1.5×10⁻⁰⁵, want 0.0001"},
		}},
	{"grouped digits", `{"properties":{"n":{"minimum":123456.5},"s":{"minLength":1234}}}`, `{"n":-12345,"s":"x"}`, []shownProblem{
		{"input.n", "minimum", "minimum: got -12,345, want 123,456.5"},
		{"input.s", "minLength", "minLength: got 1, want 1,234"},
	}},
	{"pattern, unanchored", `{"items":{"pattern":"[a-z]-[0-9]"}}`, `["Ada!","x-1y"]`,
		[]shownProblem{{"input[0]", "pattern", "pattern: 'Ada!' does not match pattern '[a-z]-[0-9]'"}}},
	{"false schema", `{"properties":{"x":false,"y":true}}`, `{"x":1,"y":1}`,
		[]shownProblem{{"input.x", "false", "false: no value is allowed here"}}},
	{"$ref into $defs", `{"type":"object","properties":{"lines":{"type":"array","items":{"$ref":"#/$defs/line"}}},` +
		`"$defs":{"line":{"type":"object","required":["sku"],"properties":{"sku":{"type":"string"}}}}}`,
		`{"lines":[{"sku":7},{}]}`, []shownProblem{
			{"input.lines[0].sku", "type", "type: got number, want string"},
			{"input.lines[1].sku", "required", "required: required property is missing"},
		}},
	{"$ref with siblings", `{"$defs":{"n":{"type":"number"}},"properties":{"a":{"$ref":"#/$defs/n","minimum":1},"b":{"$ref":"#/$defs/n"}}}`,
		`{"a":0,"b":"x"}`, []shownProblem{
			{"input.a", "minimum", "minimum: got 0, want 1"},
			{"input.b", "type", "type: got string, want number"},
		}},
	{"recursive $ref", `{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"},"v":{"type":"integer"}}}}}`,
		`{"v":1,"next":{"v":1.5,"next":{}}}`, []shownProblem{{"input.next.v", "type", "type: got number, want integer"}}},
	{"annotations check nothing", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"t","description":"d",` +
		`"default":1,"examples":[1],"$comment":"c","type":"number"}`, `3`, nil},
}

// The browser's input checker (assets/inputschema.js) names, for each
// keyword of the subset and for $ref, the problems the gateway's checker
// (plan.Validated.CheckInputSchema) names: the same keywords and messages
// in the same order, at the gateway's paths.
func TestInputSchemaCheckerMatchesTheGateway(t *testing.T) {
	t.Parallel()
	type check struct{ Schema, Input json.RawMessage }
	checks := make([]check, len(schemaCases))
	for i, c := range schemaCases {
		checks[i] = check{json.RawMessage(c.schema), json.RawMessage(c.input)}
		var want []shownProblem
		for _, p := range c.want {
			want = append(want, shownProblem{Keyword: p.Keyword, Message: p.Message})
		}
		require.Equal(t, want, gatewayProblems(t, c.schema, c.input), "%s: the gateway's checker", c.name)
	}

	b := setup(t)
	b.open("/")
	got, err := chromedp.Run(b.step(), chromedp.Evaluate[[][]shownProblem](
		`import(document.querySelector('script[type="module"]').src.replace(/app\.js$/, 'inputschema.js')).then(m => `+
			js(checks)+`.map(c => m.checkInput(c.Schema, c.Input).map(p => ({Path: p.path, Keyword: p.keyword, Message: p.message}))))`,
		chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Len(t, got, len(schemaCases))
	for i, c := range schemaCases {
		want := c.want
		if want == nil {
			want = []shownProblem{}
		}
		require.Equal(t, want, got[i], "%s: the browser's checker", c.name)
	}
	b.console.RequireNoErrors(t)
}

// gatewayProblems returns what the gateway's checker names for input
// against schema, as keyword and message, with no path: the gateway
// renders paths itself (TestPlanStartChecksTheInputInTheBrowser compares
// them).
func gatewayProblems(t *testing.T, schema, input string) []shownProblem {
	t.Helper()
	doc := `{"planId":"t","planVersion":"1","inputSchema":` + schema + `,"steps":[{"id":"a","activity":"echo"}]}`
	v, err := plan.ParseValidated([]byte(doc), plan.Limits{})
	require.NoError(t, err)
	var out []shownProblem
	for _, p := range v.CheckInputSchema([]byte(input)) {
		out = append(out, shownProblem{Keyword: p.Keyword, Message: p.Keyword + ": " + p.Message})
	}
	return out
}

// typedOrderSchema is docs/plans.md's example input schema.
const typedOrderSchema = `{"type":"object","required":["total","customer"],"additionalProperties":false,
	"properties":{"total":{"type":"number","minimum":0},"customer":{"type":"string","minLength":1,"pattern":"^[a-z0-9-]+$"},
	"currency":{"enum":["EUR","USD"]},"lines":{"type":"array","items":{"$ref":"#/$defs/line"}}},
	"$defs":{"line":{"type":"object","required":["sku"],"properties":{"sku":{"type":"string"}}}}}`

// An input typed into Start run's editor that breaks the plan's schema
// has, before anything is sent, the problems the gateway names for it
// listed and labelled as checked in the browser; Start still sends it and
// shows the gateway's answer, and an input that fits lists none (issue
// #39, part 1).
func TestPlanStartChecksTheInputInTheBrowser(t *testing.T) {
	t.Parallel()
	s := setupStack(t)
	_, _, err := s.client.PushPlan(t.Context(), api.PlanPushRequest{ProjectID: "shop", Plan: json.RawMessage(
		`{"planId":"typed-order","planVersion":"1","inputSchema":` + typedOrderSchema + `,"steps":[{"id":"charge","activity":"echo"}]}`)})
	require.NoError(t, err)
	const bad = `{"total": -1, "customer": "Ada!", "currency": "GBP", "lines": [{"sku": 7}, {}], "extra": true}`
	want := startProblems(t, s, bad)
	require.Len(t, want, 6, "%+v", want)

	s.open("/plans/typed-order?projectId=shop")
	s.do(chromedp.WaitVisible(sel("plan-start-form")), chromedp.SendKeys(sel("plan-start-env"), "prod"))
	typeInput := func(input string) {
		t.Helper()
		s.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="plan-start-input"]').value = ''`),
			chromedp.SendKeys(sel("plan-start-input"), input))
	}
	typeInput(bad)
	s.waitFor(`document.querySelectorAll('[data-testid="plan-start-local-problem"]').length === ` + js(len(want)))
	require.Equal(t, want, shownProblems(s, "plan-start-local-problem"))
	require.Contains(t, eval[string](s.bundle, `document.querySelector('[data-testid="plan-start-local-error"]').textContent`), "Checked in the browser")
	require.False(t, eval[bool](s.bundle, `document.querySelector('[data-testid="plan-start-submit"]').disabled`), "Start stays possible")
	require.Zero(t, s.rec.count("POST /gateway/v1/runs"), "the problems are found before anything is sent")

	// Start sends it anyway: the gateway's answer, the same problems.
	s.do(chromedp.Click(sel("plan-start-submit")))
	s.waitFor(`document.querySelectorAll('[data-testid="plan-start-problem"]').length > 0`)
	require.Equal(t, want, shownProblems(s, "plan-start-problem"))
	require.Zero(t, eval[int](s.bundle, `document.querySelectorAll('[data-testid="plan-start-local-problem"]').length`))
	require.Equal(t, 1, s.rec.count("POST /gateway/v1/runs"))

	// An input that fits: no problem, and nothing more is sent.
	typeInput(`{"total": 3, "customer": "ada", "currency": "EUR", "lines": [{"sku": "a-1"}]}`)
	s.waitFor(`document.querySelector('[data-testid="plan-start-problems"]').hidden`)
	require.Zero(t, eval[int](s.bundle, `document.querySelectorAll('[data-testid="plan-start-local-problem"], [data-testid="plan-start-problem"]').length`))
	require.Equal(t, 1, s.rec.count("POST /gateway/v1/runs"))
	requireOnlyErrors(t, s, `status of 400 .*/gateway/v1/runs`)
}

// startProblems returns the problems the gateway names for a start of
// typed-order@1 with input.
func startProblems(t *testing.T, s *stack, input string) []shownProblem {
	t.Helper()
	_, err := s.client.StartRun(t.Context(), api.StartRunRequest{TenantID: stackTenant, ProjectID: "shop", EnvironmentID: "prod",
		PlanRef: &api.PlanRef{PlanID: "typed-order", PlanVersion: "1"}, Input: json.RawMessage(input)})
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	raw, err := json.Marshal(ce.Details["problems"])
	require.NoError(t, err)
	var ps []api.Problem
	require.NoError(t, json.Unmarshal(raw, &ps))
	out := make([]shownProblem, len(ps))
	for i, p := range ps {
		out[i] = shownProblem{p.Path, p.Keyword, p.Message}
	}
	return out
}

// shownProblems returns the problems the page lists in rows of testid.
func shownProblems(s *stack, testid string) []shownProblem {
	return eval[[]shownProblem](s.bundle, `[...document.querySelectorAll('[data-testid="`+testid+`"]')].map(p => ({
		Path: p.querySelector('[data-testid="problem-path"]').textContent,
		Keyword: p.querySelector('[data-testid="problem-keyword"]').textContent,
		Message: p.querySelector('[data-testid="problem-message"]').textContent}))`)
}
