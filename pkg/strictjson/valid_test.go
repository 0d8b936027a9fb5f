package strictjson

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want []where // nil: valid
		msg  string
	}{
		{"null", `null`, nil, ""},
		{"number", ` 1e400 `, nil, ""},
		{"string", `"s"`, nil, ""},
		{"bool", "false\n", nil, ""},
		{"empty containers", `[{},[],{"a":[]}]`, nil, ""},
		{"same key in sibling objects", `[{"a":1},{"a":1}]`, nil, ""},
		{"same key at two depths", `{"a":{"a":{"a":1}}}`, nil, ""},
		{"keys differing in case", `{"a":1,"A":2}`, nil, ""},
		{"valid surrogate pair", `"\ud83d\ude00"`, nil, ""},
		{"escaped backslash before u", `"\\ud800"`, nil, ""},
		{"duplicate key", `{"a":1,"a":2}`, []where{{"", CodeDuplicateKey}}, `key "a" appears more than once`},
		{"duplicate key deep in an array", `[1,[{"x":{"b":1,"b":[]}}]]`, []where{{"[1][0].x", CodeDuplicateKey}}, ""},
		{"duplicates collected", `{"a":1,"a":2,"b":{"c":1,"c":2}}`, []where{{"", CodeDuplicateKey}, {"b", CodeDuplicateKey}}, ""},
		{"trailing value", `1 2`, []where{{"", CodeMalformed}}, "trailing data after the document at byte offset 2"},
		{"trailing object", `{} {}`, []where{{"", CodeMalformed}}, "trailing data"},
		{"trailing garbage", `[]x`, []where{{"", CodeMalformed}}, "trailing data"},
		{"empty", ``, []where{{"", CodeMalformed}}, "invalid JSON"},
		{"bare word", `nul`, []where{{"", CodeMalformed}}, "invalid JSON"},
		{"unclosed", `[1,`, []where{{"[1]", CodeMalformed}}, "invalid JSON"},
		{"single quotes", `{'a':1}`, []where{{"", CodeMalformed}}, "invalid JSON"},
		{"NaN", `NaN`, []where{{"", CodeMalformed}}, "invalid JSON"},
		{"control character in a string", "\"a\tb\"", []where{{"", CodeMalformed}}, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Valid([]byte(tt.data), Options{})
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			ps := problemsOf(t, err)
			require.Equal(t, tt.want, wheres(ps), "%v", ps)
			require.Contains(t, ps[0].Message, tt.msg)
		})
	}
}

func TestInvalidUTF8(t *testing.T) {
	t.Parallel()
	const surrogate = "is half of a UTF-16 surrogate pair"
	tests := []struct {
		name string
		data string
		msg  string
	}{
		{"in a string", "{\"name\":\"a\xffb\"}", "invalid UTF-8 at byte offset 10"},
		{"in a key", "{\"n\xc3\":1}", "invalid UTF-8 at byte offset 3"},
		{"truncated sequence at the end", "\"\xe2\x82", "invalid UTF-8 at byte offset 1"},
		{"encoded surrogate", "\"\xed\xa0\x80\"", "invalid UTF-8 at byte offset 1"},
		{"outside a string", "{}\xff", "invalid UTF-8 at byte offset 2"},
		{"lone high surrogate", `{"name":"\ud800"}`, `the \u escape at byte offset 9 ` + surrogate},
		{"lone low surrogate", `{"name":"\udc00"}`, `byte offset 9 ` + surrogate},
		{"high surrogate at the end of a string", `{"name":"x\uD800"}`, `byte offset 10 ` + surrogate},
		{"high surrogate then a character", `{"name":"\ud800\u0041"}`, `byte offset 9 ` + surrogate},
		{"two high surrogates", `{"name":"\ud800\ud800"}`, `byte offset 9 ` + surrogate},
		{"reversed pair", `{"name":"\udc00\ud800"}`, `byte offset 9 ` + surrogate},
		{"lone surrogate in a key", `{"\ud800":1}`, `byte offset 2 ` + surrogate},
		{"lone surrogate after a good pair", `{"name":"\ud83d\ude00\udfff"}`, `byte offset 21 ` + surrogate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, err := range []error{Decode([]byte(tt.data), &doc{}, Options{}), Valid([]byte(tt.data), Options{})} {
				ps := problemsOf(t, err)
				require.Equal(t, []Problem{{Code: CodeInvalidUTF8, Message: ps[0].Message}}, ps)
				require.Contains(t, ps[0].Message, tt.msg)
			}
		})
	}
}

func TestValidSurrogatePairDecodes(t *testing.T) {
	t.Parallel()
	var d doc
	require.NoError(t, Decode([]byte(`{"name":"\ud83d\ude00 \uD83D\uDE00"}`), &d, Options{}))
	require.Equal(t, "😀 😀", d.Name)
}

func TestCheckUTF8(t *testing.T) {
	t.Parallel()
	require.NoError(t, CheckUTF8([]byte("plain: text é\n")))
	require.NoError(t, CheckUTF8(nil))
	ps := problemsOf(t, CheckUTF8([]byte("key: v\xc3\n")))
	require.Equal(t, []Problem{{Code: CodeInvalidUTF8, Message: "invalid UTF-8 at byte offset 6"}}, ps)
}

// nest returns n arrays nested in each other: [[…]].
func nest(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// nestObjects returns n objects nested in each other: {"a":{"a":…{}}}.
func nestObjects(n int) string {
	return strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1)
}

func TestMaxDepth(t *testing.T) {
	t.Parallel()
	require.NoError(t, Valid([]byte(nest(DefaultMaxDepth)), Options{}), "exactly at the default limit")
	ps := problemsOf(t, Valid([]byte(nest(DefaultMaxDepth+1)), Options{}))
	require.Equal(t, []where{{strings.Repeat("[0]", DefaultMaxDepth), CodeTooDeep}}, wheres(ps))
	require.Equal(t, "nested deeper than the limit of 32", ps[0].Message)

	require.NoError(t, Valid([]byte(nestObjects(3)), Options{MaxDepth: 3}))
	ps = problemsOf(t, Valid([]byte(nestObjects(4)), Options{MaxDepth: 3}))
	require.Equal(t, []where{{"a.a.a", CodeTooDeep}}, wheres(ps))

	require.NoError(t, Valid([]byte(`[[["scalars do not count",1,null]]]`), Options{MaxDepth: 3}))
	require.NoError(t, Valid([]byte(`1`), Options{MaxDepth: 1}))
	require.NoError(t, Valid([]byte(`[]`), Options{MaxDepth: -5}), "a negative limit means the default")

	// In a typed document, depth counts through raw values and values of
	// the wrong type too.
	doc4 := `{"steps":[{"id":"a","input":{"x":[]}}]}` // depth 5
	require.NoError(t, Decode([]byte(doc4), &doc{}, Options{MaxDepth: 5}))
	ps = problemsOf(t, Decode([]byte(doc4), &doc{}, Options{MaxDepth: 4}))
	require.Equal(t, []where{{"steps[0].input.x", CodeTooDeep}}, wheres(ps))
	ps = problemsOf(t, Decode([]byte(`{"count":[[]]}`), &doc{}, Options{MaxDepth: 2}))
	require.Equal(t, []where{{"count", CodeWrongType}, {"count[0]", CodeTooDeep}}, wheres(ps))
}

func TestDeepInputStopsAtTheLimit(t *testing.T) {
	t.Parallel()
	ps := problemsOf(t, Valid([]byte(nest(1_000_000)), Options{}))
	require.Equal(t, []where{{strings.Repeat("[0]", DefaultMaxDepth), CodeTooDeep}}, wheres(ps))
}
