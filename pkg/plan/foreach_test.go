package plan

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/plan/expr"
)

func TestForEach(t *testing.T) {
	t.Parallel()
	doc := func(version, extra string) []byte {
		return []byte(`{` + version + `"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo"},
			{"id":"b","activity":"echo","dependsOn":["a"],"input":{"x":"${{ item.x }}","i":"${{ index }}"}` + extra + `}]}`)
	}
	p, err := Parse(doc("", `,"forEach":"steps.a.output.rows","maxParallel":3,"failFast":false`), Limits{})
	require.NoError(t, err)
	require.Equal(t, SchemaVersionExpressions, p.SchemaVersion)
	requireRoundTrip(t, p)
	s, _ := p.Step("b")
	require.Equal(t, 3, s.EffectiveMaxParallel())
	require.False(t, s.EffectiveFailFast())
	l, err := p.ForEachList("b", expr.Limits{})
	require.NoError(t, err)
	require.NotNil(t, l)
	a, _ := p.Step("a")
	require.Equal(t, DefaultMaxParallel, a.EffectiveMaxParallel())
	require.True(t, a.EffectiveFailFast())

	for extra, code := range map[string]string{
		``:                                     CodeInvalidExpression, // item and index outside a forEach
		`,"forEach":"steps.a.output +"`:        CodeInvalidExpression,
		`,"forEach":"'text'"`:                  CodeInvalidExpression, // not a list
		`,"forEach":"steps.b.output"`:          CodeInvalidExpression, // not an ancestor
		`,"forEach":"[1]","maxParallel":-1`:    CodeInvalidForEach,
		`,"forEach":"[1]","maxParallel":1001`:  CodeInvalidForEach,
		`,"maxParallel":2`:                     CodeInvalidForEach,
		`,"failFast":true`:                     CodeInvalidForEach,
		`,"forEach":"[1]","kind":"waitSignal"`: CodeFieldNotAllowed,
	} {
		_, err := Parse(doc("", extra), Limits{})
		require.Error(t, err, extra)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, extra)
		codes := map[string]bool{}
		for _, pr := range ve.Problems {
			codes[pr.Code] = true
		}
		require.True(t, codes[code], "%s: want %s in %v", extra, code, ve.Problems)
	}
	_, err = Parse(doc("", `,"forEach":"[1]","maxParallel":1000`), Limits{})
	require.NoError(t, err, "maxParallel at its limit")
	_, err = Parse(doc(`"schemaVersion":1,`, `,"forEach":"[1]"`), Limits{})
	requireOnly(t, err, CodeFieldNotAllowed)
	require.ErrorContains(t, err, "forEach needs schemaVersion 2")
}

// A step id that names an element of a forEach step would mix the two
// steps' events: refused.
func TestForEachChildIDIsReserved(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(`{"planId":"p","planVersion":"1","steps":[{"id":"fan","activity":"echo","forEach":"[1]"},
		{"id":"fan[0]","activity":"echo"}]}`), Limits{})
	requireProblem(t, err, CodeInvalidForEach, "fan[0]")
	_, err = Parse([]byte(`{"planId":"p","planVersion":"1","steps":[{"id":"fan","activity":"echo"},
		{"id":"fan[0]","activity":"echo"}]}`), Limits{})
	require.NoError(t, err, "without a forEach step the id is an id")
}
