package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// YAML plans follow YAML 1.2: only true and false are booleans, so `y`,
// `no` and `on` stay the strings they look like; anchors, aliases and
// merge keys work; what JSON cannot hold is refused with its line.
func TestParseYAML12(t *testing.T) {
	t.Parallel()
	p, err := Parse([]byte(`planId: p
planVersion: "1"
steps:
  - id: a
    activity: echo
    retry: &policy {maxAttempts: 3, initialBackoff: 1s}
    input: {y: 2, answer: no, on: on, flag: true, when: 2024-07-01, hex: 0x1F, big: 1.5e3, nothing: ~}
  - id: b
    activity: echo
    dependsOn: [a]
    retry:
      <<: *policy
      maxAttempts: 5
`), Limits{})
	require.NoError(t, err)
	a, _ := p.Step("a")
	require.JSONEq(t, `{"y": 2, "answer": "no", "on": "on", "flag": true, "when": "2024-07-01", "hex": 31, "big": 1500, "nothing": null}`,
		string(a.Input))
	b, _ := p.Step("b")
	require.Equal(t, 5, b.Retry.MaxAttempts, "an explicit key wins over a merged one")
	require.Equal(t, a.Retry.InitialBackoff, b.Retry.InitialBackoff, "the merge key brings the rest")

	for doc, msg := range map[string]string{
		"planId: p\nplanVersion: v\nsteps: [{id: a, activity: echo, input: {x: .inf}}]\n":      "line 3: .inf is not a number JSON can hold",
		"planId: p\nplanVersion: v\nsteps: [{id: a, activity: echo, input: !custom {x: 1}}]\n": "the tag \"!custom\" is not supported",
		"planId: p\nplanVersion: v\nsteps: [{id: a, activity: echo, input: {[1]: x}}]\n":       "a sequence, not a string",
		"planId: p\nplanVersion: v\nsteps: [{id: a, activity: echo, input: {x: 1, x: 2}}]\n":   `line 3: key "x" already set`,
	} {
		_, err := Parse([]byte(doc), Limits{})
		require.ErrorContains(t, err, msg, doc)
	}
}

// Aliases cannot expand a small document into a huge one: the values an
// expansion makes are bounded by the plan's byte limit.
func TestParseYAMLAliasBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 8; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	_, err := yamlToJSON([]byte(b.String()), 100, DefaultMaxPlanBytes)
	require.ErrorContains(t, err, "expands to too many values")
	out, err := yamlToJSON([]byte("a: &x [1, 2]\nb: *x\n"), 10, 100)
	require.NoError(t, err)
	require.True(t, json.Valid(out))
	require.JSONEq(t, `{"a": [1, 2], "b": [1, 2]}`, string(out))
}
