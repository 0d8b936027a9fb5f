package plan

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/plan/expr"
)

const exprPlan = `{"planId":"orders","planVersion":"1","steps":[
	{"id":"fetch","activity":"http-get","input":{"url":"${{ input.url }}"}},
	{"id":"price-check","activity":"echo","dependsOn":["fetch"],"input":{"body":"${{ steps.fetch.output.body }}"}},
	{"id":"notify","activity":"echo","dependsOn":["price-check"],
	 "input":{"msg":"order ${{ run.id }}: ${{ steps[\"price-check\"].status }}","url":"${{ steps.fetch.output.url }}"}}]}`

func TestExpressionsMakeVersion2(t *testing.T) {
	t.Parallel()
	p, err := Parse([]byte(exprPlan), Limits{})
	require.NoError(t, err)
	require.Equal(t, SchemaVersionExpressions, p.SchemaVersion, "a plan whose inputs hold ${{ is of version 2")
	require.True(t, p.Expressive())
	requireRoundTrip(t, p)
	require.Equal(t, []string{"fetch", "price-check"}, p.Ancestors("notify"))
	require.Nil(t, p.Ancestors("fetch"))

	tpl, err := p.InputTemplate("notify", expr.Limits{})
	require.NoError(t, err)
	require.True(t, tpl.HasExpressions())
	tpl, err = p.InputTemplate("nope", expr.Limits{})
	require.NoError(t, err)
	require.Nil(t, tpl)
}

// A plan of version 1 reads "${{" as the text it always was: a plan stored
// before expressions existed runs as it did.
func TestVersion1ReadsExpressionsAsText(t *testing.T) {
	t.Parallel()
	doc := strings.Replace(exprPlan, `{"planId"`, `{"schemaVersion":1,"planId"`, 1)
	doc = strings.Replace(doc, `steps.fetch.output.body`, `steps.unknown.output`, 1)
	p, err := Parse([]byte(doc), Limits{})
	require.NoError(t, err, "no expression is compiled, so none is wrong")
	require.Equal(t, 1, p.SchemaVersion)
	require.False(t, p.Expressive())
	tpl, err := p.InputTemplate("notify", expr.Limits{})
	require.NoError(t, err)
	require.Nil(t, tpl)
}

func TestInvalidExpressionsAreProblems(t *testing.T) {
	t.Parallel()
	doc := strings.NewReplacer(
		`${{ input.url }}`, `${{ input.url + }}`,
		`steps.fetch.output.body`, `steps.notify.output`,
		`steps.fetch.output.url }}`, `steps.fetch.output.url`,
	).Replace(exprPlan)
	_, err := Parse([]byte(doc), Limits{})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	want := []string{
		"fetch input.url column 12: Syntax error: mismatched input '<EOF>'",
		`price-check input.body column 7: step "notify" is not a step this one depends on`,
		"notify input.url an expression opened with ${{ is not closed",
	}
	require.Len(t, ve.Problems, len(want), "%v", ve.Problems)
	for i, p := range ve.Problems {
		require.Equal(t, CodeInvalidExpression, p.Code, p.String())
		require.True(t, strings.HasPrefix(p.StepID+" "+p.Field+" "+p.Message, want[i]), "%s\nwant prefix %s", p, want[i])
	}
}

func TestMaxExpressionBytesEdge(t *testing.T) {
	t.Parallel()
	src := "input.a" + strings.Repeat(" + input.a", 9) // 97 bytes
	doc := `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo","input":"${{ ` + src + ` }}"}]}`
	_, err := Parse([]byte(doc), Limits{MaxExpressionBytes: len(src)})
	require.NoError(t, err, "an expression exactly at the limit")
	_, err = Parse([]byte(doc), Limits{MaxExpressionBytes: len(src) - 1})
	requireOnly(t, err, CodeInvalidExpression)
	require.ErrorContains(t, err, "over the limit of 96")
}

func TestConditions(t *testing.T) {
	t.Parallel()
	doc := func(version, cond string) []byte {
		return []byte(`{` + version + `"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo"},
			{"id":"b","activity":"echo","dependsOn":["a"],"if":` + cond + `}]}`)
	}
	for _, ok := range []string{`"steps.a.output.ok"`, `"${{ input.n > 1 }}"`, `"true"`} {
		p, err := Parse(doc("", ok), Limits{})
		require.NoError(t, err, ok)
		require.Equal(t, SchemaVersionExpressions, p.SchemaVersion, "a condition makes a plan of version 2")
		c, err := p.Condition("b", expr.Limits{})
		require.NoError(t, err)
		require.NotNil(t, c)
	}
	for cond, want := range map[string]string{
		`"input.n + 1"`:           "a condition must yield a bool, not int",
		`"steps.b.status == 'x'"`: `column 7: step "b" is not a step this one depends on`,
		`"input.n >"`:             "column 10: Syntax error",
	} {
		_, err := Parse(doc("", cond), Limits{})
		requireOnly(t, err, CodeInvalidExpression)
		require.ErrorContains(t, err, `step "b": if: `+want, cond)
	}
	_, err := Parse(doc(`"schemaVersion":1,`, `"true"`), Limits{})
	requireOnly(t, err, CodeFieldNotAllowed)
	require.ErrorContains(t, err, "a condition needs schemaVersion 2")
}

func TestOutput(t *testing.T) {
	t.Parallel()
	doc := func(version, out string) []byte {
		return []byte(`{` + version + `"planId":"p","planVersion":"1","output":` + out + `,
			"steps":[{"id":"a","activity":"echo"},{"id":"b","activity":"echo","dependsOn":["a"]}]}`)
	}
	p, err := Parse(doc("", `"{'b': steps.b.output, 'in': input}"`), Limits{})
	require.NoError(t, err)
	require.Equal(t, SchemaVersionExpressions, p.SchemaVersion, "an output makes a plan of version 2")
	v, err := p.OutputValue(expr.Limits{})
	require.NoError(t, err)
	require.NotNil(t, v)
	requireRoundTrip(t, p)

	_, err = Parse(doc("", `"steps.c.output"`), Limits{})
	requireOnly(t, err, CodeInvalidExpression)
	require.ErrorContains(t, err, `output: column 7: step "c" is not a step this one depends on`)
	_, err = Parse(doc(`"schemaVersion":1,`, `"input"`), Limits{})
	requireOnly(t, err, CodeFieldNotAllowed)
}

func TestRunIfAndHandles(t *testing.T) {
	t.Parallel()
	doc := func(version, extra string) []byte {
		return []byte(`{` + version + `"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo"},{"id":"x","activity":"echo"},
			{"id":"b","activity":"echo","dependsOn":["a"]` + extra + `}]}`)
	}
	p, err := Parse(doc("", `,"runIf":"anyFailed","handles":["a"]`), Limits{})
	require.NoError(t, err)
	require.Equal(t, SchemaVersionExpressions, p.SchemaVersion)
	s, _ := p.Step("b")
	require.Equal(t, RunIfAnyFailed, s.EffectiveRunIf())
	requireRoundTrip(t, p)
	a, _ := p.Step("a")
	require.Equal(t, RunIfAllSucceeded, a.EffectiveRunIf())

	for extra, code := range map[string]string{
		`,"runIf":"sometimes"`:                      CodeInvalidRunIf,
		`,"runIf":"allDone","handles":["a"]`:        CodeFieldNotAllowed,
		`,"handles":["a"]`:                          CodeFieldNotAllowed,
		`,"runIf":"anyFailed","handles":["x"]`:      CodeInvalidRunIf,
		`,"runIf":"anyFailed","handles":["nobody"]`: CodeInvalidRunIf,
	} {
		_, err := Parse(doc("", extra), Limits{})
		requireOnly(t, err, code)
	}
	_, err = Parse(doc(`"schemaVersion":1,`, `,"runIf":"allDone"`), Limits{})
	requireOnly(t, err, CodeFieldNotAllowed)
	require.ErrorContains(t, err, "need schemaVersion 2")
}
