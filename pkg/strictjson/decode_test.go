package strictjson

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDecodeAccepts(t *testing.T) {
	t.Parallel()
	data := `{
		"name": "n", "count": -9223372036854775808, "small": -128, "size": 65535,
		"ratio": 1.5e300, "ratio32": 3.4e38, "on": true,
		"steps": [{"id": "a", "retry": {"maxAttempts": 2147483647}, "input": {"x": [1e400, null]}, "tags": {"a b": "c"}}],
		"at": "2024-05-01T10:00:00Z", "wait": "1m30s", "limits": {}, "level": "high",
		"blob": "aGk=", "pair": [1], "byId": {"-7": "x"}, "byLevel": {"low": 1},
		"any": {"k": [true, null, 2.5, "s"]}, "quoted": "42", "qs": "\"q\"", "num": "12.5e3",
		"Untag": "u", "extra": {"e": null, "f": {"v": 1}},
		"inner": 7, "deep": true
	}`
	var got doc
	require.NoError(t, Decode([]byte(data), &got, Options{}))
	at, err := time.Parse(time.RFC3339, "2024-05-01T10:00:00Z")
	require.NoError(t, err)
	require.Equal(t, doc{
		Name: "n", Count: -1 << 63, Small: -128, Size: 65535, Ratio: 1.5e300, Ratio32: 3.4e38, On: true,
		Steps: []step{{
			ID: "a", Retry: &retry{MaxAttempts: 1<<31 - 1},
			Input: json.RawMessage(`{"x": [1e400, null]}`), Tags: map[string]string{"a b": "c"},
		}},
		At: at, Wait: duration(90 * time.Second), Limits: &limits{Max: 10}, Level: 2,
		Blob: []byte("hi"), Pair: [2]int{1, 0}, ByID: map[int]string{-7: "x"}, ByLevel: map[level]int{1: 1},
		Any: map[string]any{"k": []any{true, nil, 2.5, "s"}}, Quoted: 42, QuotedS: "q", Num: "12.5e3",
		Untag: "u", Extra: map[string]*extra{"e": nil, "f": {V: 1}},
		Embedded: Embedded{Inner: 7}, Pointed: &Pointed{Deep: true},
	}, got)
}

func TestDecodeNullMeansAbsent(t *testing.T) {
	t.Parallel()
	got := doc{Name: "kept", Steps: []step{{ID: "x"}}}
	require.NoError(t, Decode([]byte(`{"name":null,"count":null,"steps":null,"limits":null,"blob":null,"any":null,"quoted":null,"at":null,"level":null}`), &got, Options{}))
	require.Equal(t, "kept", got.Name, "null leaves a string alone, as in encoding/json")
	require.Nil(t, got.Steps)
}

func TestDecodeProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data string
		want []where
		msg  string // a substring of the first problem's message
	}{
		{"unknown field", `{"nme":"x"}`, []where{{"nme", CodeUnknownField}}, `unknown field "nme"`},
		{"case mismatch", `{"Name":"x"}`, []where{{"Name", CodeUnknownField}}, `field names are case-sensitive, did you mean "name"?`},
		{"case mismatch nested", `{"steps":[{"id":"a"},{"ID":"b"}]}`, []where{{"steps[1].ID", CodeUnknownField}}, `did you mean "id"?`},
		{"case mismatch in a struct with UnmarshalJSON", `{"limits":{"Max":1}}`, []where{{"limits.Max", CodeUnknownField}}, `did you mean "max"?`},
		{"skipped field", `{"Skip":"x"}`, []where{{"Skip", CodeUnknownField}}, ""},
		{"unexported field", `{"hidden":"x"}`, []where{{"hidden", CodeUnknownField}}, ""},
		{"embedded struct by name", `{"Embedded":{}}`, []where{{"Embedded", CodeUnknownField}}, ""},
		{"odd key", `{"a b":1}`, []where{{`["a b"]`, CodeUnknownField}}, `unknown field "a b"`},
		{"duplicate key", `{"name":"a","name":"b"}`, []where{{"", CodeDuplicateKey}}, `key "name" appears more than once`},
		{"duplicate key by escape", `{"name":"a","\u006eame":"b"}`, []where{{"", CodeDuplicateKey}}, ""},
		{"duplicate unknown key", `{"x":1,"x":2}`, []where{{"x", CodeUnknownField}, {"", CodeDuplicateKey}}, ""},
		{"duplicate key in raw input", `{"steps":[{"id":"a","input":{"x":{"y":1,"y":2}}}]}`, []where{{"steps[0].input.x", CodeDuplicateKey}}, `key "y"`},
		{"duplicate key in an array in raw input", `{"steps":[{"id":"a","input":[[{"y":1,"y":2}]]}]}`, []where{{"steps[0].input[0][0]", CodeDuplicateKey}}, ""},
		{"duplicate key in any", `{"any":[{"k":1,"k":1}]}`, []where{{"any[0]", CodeDuplicateKey}}, ""},
		{"duplicate key in a map", `{"steps":[{"id":"a","tags":{"t":"1","t":"2"}}]}`, []where{{"steps[0].tags", CodeDuplicateKey}}, ""},
		{"duplicate key in a value of the wrong type", `{"count":{"a":1,"a":2}}`, []where{{"count", CodeWrongType}, {"count", CodeDuplicateKey}}, "must be an integer, not an object"},
		{"string for an integer", `{"count":"3"}`, []where{{"count", CodeWrongType}}, "must be an integer"},
		{"fraction for an integer", `{"count":2.5}`, []where{{"count", CodeWrongType}}, "must be an integer"},
		{"exponent for an integer", `{"count":1e2}`, []where{{"count", CodeWrongType}}, "must be an integer"},
		{"int64 overflow", `{"count":9223372036854775808}`, []where{{"count", CodeWrongType}}, "must be an integer"},
		{"int64 underflow", `{"count":-9223372036854775809}`, []where{{"count", CodeWrongType}}, "must be an integer"},
		{"int8 overflow", `{"small":128}`, []where{{"small", CodeWrongType}}, "must be an 8-bit integer"},
		{"int32 overflow", `{"steps":[{"id":"a"},{"id":"b","retry":{"maxAttempts":2147483648}}]}`, []where{{"steps[1].retry.maxAttempts", CodeWrongType}}, "must be a 32-bit integer"},
		{"negative unsigned", `{"size":-1}`, []where{{"size", CodeWrongType}}, "must be a non-negative 16-bit integer"},
		{"uint16 overflow", `{"size":65536}`, []where{{"size", CodeWrongType}}, "16-bit"},
		{"float64 overflow", `{"ratio":1e400}`, []where{{"ratio", CodeWrongType}}, "must be a number"},
		{"float32 overflow", `{"ratio32":1e39}`, []where{{"ratio32", CodeWrongType}}, "must be a number"},
		{"number too big for any", `{"any":{"a":[1e400]}}`, []where{{"any.a[0]", CodeWrongType}}, "float64"},
		{"string for a bool", `{"on":"true"}`, []where{{"on", CodeWrongType}}, "must be true or false"},
		{"number for a bool", `{"on":1}`, []where{{"on", CodeWrongType}}, "must be true or false"},
		{"number for a string", `{"name":7}`, []where{{"name", CodeWrongType}}, "must be a string"},
		{"bool for a string", `{"name":false}`, []where{{"name", CodeWrongType}}, "must be a string"},
		{"object for an array", `{"steps":{}}`, []where{{"steps", CodeWrongType}}, "must be an array, not an object"},
		{"array for an object", `{"steps":[[]]}`, []where{{"steps[0]", CodeWrongType}}, "must be an object, not an array"},
		{"string for an object", `{"steps":["a"]}`, []where{{"steps[0]", CodeWrongType}}, "must be an object"},
		{"null array element", `{"steps":[null]}`, []where{{"steps[0]", CodeWrongType}}, "must be an object, not null"},
		{"null integer element", `{"pair":[1,null]}`, []where{{"pair[1]", CodeWrongType}}, "must be an integer, not null"},
		{"too many elements", `{"pair":[1,2,3]}`, []where{{"pair", CodeWrongType}}, "must have at most 2 elements"},
		{"bad base64", `{"blob":"!!"}`, []where{{"blob", CodeWrongType}}, "must be a base64 string"},
		{"bytes out of range", `{"blob":[1,256]}`, []where{{"blob[1]", CodeWrongType}}, "8-bit"},
		{"map key not an integer", `{"byId":{"x":"a"}}`, []where{{"byId", CodeWrongType}}, `key "x" must be an integer`},
		{"map key rejected by UnmarshalText", `{"byLevel":{"mid":1}}`, []where{{"byLevel", CodeWrongType}}, `key "mid": level must be low or high`},
		{"map element of the wrong type", `{"extra":{"e":{"v":"1"}}}`, []where{{"extra.e.v", CodeWrongType}}, "must be an integer"},
		{"time not RFC 3339", `{"at":"yesterday"}`, []where{{"at", CodeWrongType}}, "parsing time"},
		{"time as a number", `{"at":5}`, []where{{"at", CodeWrongType}}, "Time.UnmarshalJSON"},
		{"rejected by UnmarshalJSON", `{"wait":"soon"}`, []where{{"wait", CodeWrongType}}, "bad duration"},
		{"object rejected by UnmarshalJSON", `{"wait":{}}`, []where{{"wait", CodeWrongType}}, "bad duration"},
		{"null rejected by UnmarshalJSON", `{"wait":null}`, []where{{"wait", CodeWrongType}}, "bad duration"},
		{"struct rejected by its UnmarshalJSON", `{"limits":{"max":-1}}`, []where{{"limits", CodeWrongType}}, "max must not be negative"},
		{"rejected by UnmarshalText", `{"level":"mid"}`, []where{{"level", CodeWrongType}}, "level must be low or high"},
		{"number for UnmarshalText", `{"level":1}`, []where{{"level", CodeWrongType}}, "must be a string"},
		{",string with a number", `{"quoted":5}`, []where{{"quoted", CodeWrongType}}, "must be a string holding an integer"},
		{",string with text", `{"quoted":"x"}`, []where{{"quoted", CodeWrongType}}, ""},
		{",string with spaces", `{"quoted":" 5"}`, []where{{"quoted", CodeWrongType}}, ""},
		{",string with a fraction", `{"quoted":"5.5"}`, []where{{"quoted", CodeWrongType}}, ""},
		{",string with an unquoted string", `{"qs":"q"}`, []where{{"qs", CodeWrongType}}, "must be a string holding a string"},
		{",string with an object", `{"quoted":{"a":1,"a":2},"name":"x"}`, []where{{"quoted", CodeWrongType}, {"quoted", CodeDuplicateKey}}, "must be a string holding an integer, not an object"},
		{",string with an array", `{"quoted":[1],"count":"x"}`, []where{{"quoted", CodeWrongType}, {"count", CodeWrongType}}, "not an array"},
		{"object for UnmarshalText", `{"level":{"a":1},"name":"x"}`, []where{{"level", CodeWrongType}}, "must be a string, not an object"},
		{",string with a lone surrogate", `{"qs":"\"\\ud800\""}`, []where{{"qs", CodeWrongType}}, ""},
		{"json.Number not a number", `{"num":"12x"}`, []where{{"num", CodeWrongType}}, "must be a number"},
		{"top level array", `[]`, []where{{"", CodeMalformed}}, "a document must be a JSON object"},
		{"top level string", `"x"`, []where{{"", CodeMalformed}}, "a document must be a JSON object"},
		{"top level null", `null`, []where{{"", CodeMalformed}}, "a document must be a JSON object"},
		{"trailing object", `{} {}`, []where{{"", CodeMalformed}}, "trailing data after the document at byte offset 3"},
		{"trailing garbage", `{}x`, []where{{"", CodeMalformed}}, "trailing data after the document at byte offset 2"},
		{"trailing bracket", "{}\n]", []where{{"", CodeMalformed}}, "byte offset 3"},
		{"syntax error", `{"name":"a",}`, []where{{"", CodeMalformed}}, "invalid JSON near byte offset"},
		{"syntax error inside", `{"steps":[{"id":"a" "x":1}]}`, []where{{"steps[0]", CodeMalformed}}, "invalid JSON"},
		{"truncated", `{"name":"a"`, []where{{"", CodeMalformed}}, "unexpected EOF"},
		{"empty", ``, []where{{"", CodeMalformed}}, "unexpected EOF"},
		{"white space only", " \n", []where{{"", CodeMalformed}}, "unexpected EOF"},
		{"problems in document order", `{"Name":1,"count":"x","steps":[{"id":"a","x":1}],"on":null}`,
			[]where{{"Name", CodeUnknownField}, {"count", CodeWrongType}, {"steps[0].x", CodeUnknownField}}, ""},
		{"syntax error after problems", `{"Name":1,"count":}`, []where{{"Name", CodeUnknownField}, {"count", CodeMalformed}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got doc
			ps := problemsOf(t, Decode([]byte(tt.data), &got, Options{}))
			require.Equal(t, tt.want, wheres(ps), "%v", ps)
			require.Contains(t, ps[0].Message, tt.msg)
			require.Equal(t, doc{}, got, "nothing is decoded from a rejected document")
		})
	}
}

func TestDecodeRecursiveType(t *testing.T) {
	t.Parallel()
	var n node
	require.NoError(t, Decode([]byte(`{"v":1,"kids":[{"v":2,"kids":[]}]}`), &n, Options{}))
	require.Equal(t, node{V: 1, Kids: []*node{{V: 2, Kids: []*node{}}}}, n)
	ps := problemsOf(t, Decode([]byte(`{"kids":[{"kids":[{"v":"x","V":1}]}]}`), &node{}, Options{}))
	require.Equal(t, []where{{"kids[0].kids[0].v", CodeWrongType}, {"kids[0].kids[0].V", CodeUnknownField}}, wheres(ps))
}

func TestDecodeEmbeddedConflict(t *testing.T) {
	t.Parallel()
	type A struct {
		X int
		Z int
	}
	type B struct {
		X int
		W int `json:"Z"`
	}
	type both struct {
		A
		B
	}
	// X names a field of each at the same depth: neither wins, as in
	// encoding/json.
	ps := problemsOf(t, Decode([]byte(`{"X":1}`), &both{}, Options{}))
	require.Equal(t, []where{{"X", CodeUnknownField}}, wheres(ps))
	// Z is the name of A.Z and the tag of B.W: the tagged one wins.
	var got, want both
	require.NoError(t, Decode([]byte(`{"Z":2}`), &got, Options{}))
	require.NoError(t, json.Unmarshal([]byte(`{"Z":2}`), &want))
	require.Equal(t, both{B: B{W: 2}}, got)
	require.Equal(t, want, got)
}

func TestDecodeOtherTopLevels(t *testing.T) {
	t.Parallel()
	var list []int32
	require.NoError(t, Decode([]byte(` [1, 2] `), &list, Options{}))
	require.Equal(t, []int32{1, 2}, list)
	ps := problemsOf(t, Decode([]byte(`{"a":1}`), &list, Options{}))
	require.Equal(t, []where{{"", CodeWrongType}}, wheres(ps))
	ps = problemsOf(t, Decode([]byte(`null`), &list, Options{}))
	require.Equal(t, "must be an array, not null", ps[0].Message)

	var m map[string]int
	ps = problemsOf(t, Decode([]byte(`[1]`), &m, Options{Document: "request body"}))
	require.Equal(t, "a request body must be a JSON object", ps[0].Message)

	var n uint8
	require.NoError(t, Decode([]byte(`255`), &n, Options{}))
	require.Equal(t, uint8(255), n)
	ps = problemsOf(t, Decode([]byte(`256`), &n, Options{}))
	require.Equal(t, []Problem{{Code: CodeWrongType, Message: "must be a non-negative 8-bit integer"}}, ps)

	var b bool
	require.NoError(t, Decode([]byte(`true`), &b, Options{}))
	require.True(t, b)

	var a any
	require.NoError(t, Decode([]byte(`null`), &a, Options{}))
	require.Nil(t, a)
}

func TestDecodeInvalidTarget(t *testing.T) {
	t.Parallel()
	var ie *json.InvalidUnmarshalError
	require.ErrorAs(t, Decode([]byte(`{}`), doc{}, Options{}), &ie)
	require.ErrorAs(t, Decode([]byte(`{}`), (*doc)(nil), Options{}), &ie)
	require.ErrorAs(t, Decode([]byte(`{}`), nil, Options{}), &ie)
}

func TestDecodeLeavesUndecodableTypesToEncodingJSON(t *testing.T) {
	t.Parallel()
	var v struct {
		C chan int `json:"c"`
	}
	ps := problemsOf(t, Decode([]byte(`{"c":1}`), &v, Options{}))
	require.Equal(t, []where{{"", CodeWrongType}}, wheres(ps))
	require.Contains(t, ps[0].Message, "chan")
}

func TestDecodeMaxProblems(t *testing.T) {
	t.Parallel()
	data := []byte(`{"a":1,"b":2,"c":3,"d":4}`)
	require.Len(t, problemsOf(t, Decode(data, &doc{}, Options{MaxProblems: 2})), 2)
	require.Len(t, problemsOf(t, Decode(data, &doc{}, Options{})), 4)
	many := `{` + strings.Repeat(`"x":1,`, 200) + `"x":1}`
	require.Len(t, problemsOf(t, Decode([]byte(many), &doc{}, Options{})), DefaultMaxProblems)
}

func TestDecodeRedact(t *testing.T) {
	t.Parallel()
	const secret = "AKIAIOSFODNN7EXAMPLE"
	redact := func(key string) bool { return strings.HasPrefix(key, "AKIA") }
	data := `{"` + secret + `":1,"steps":[{"id":"a","input":{"` + secret + `":1,"` + secret + `":2}}]}`
	err := Decode([]byte(data), &doc{}, Options{Redact: redact})
	ps := problemsOf(t, err)
	require.Equal(t, []Problem{
		{Path: `["<redacted>"]`, Code: CodeUnknownField, Message: `unknown field "<redacted>"`},
		{Path: "steps[0].input", Code: CodeDuplicateKey, Message: `key "<redacted>" appears more than once`},
	}, ps)
	require.NotContains(t, err.Error(), secret)

	ps = problemsOf(t, Decode([]byte(data), &doc{}, Options{}))
	require.Equal(t, secret, ps[0].Path, "nothing is redacted by default")
}

func TestDecodeCutsLongKeys(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("k", 100)
	ps := problemsOf(t, Decode([]byte(`{"`+key+`":1}`), &doc{}, Options{}))
	require.Equal(t, `unknown field "`+strings.Repeat("k", 64)+`"…`, ps[0].Message)
}

func TestVisit(t *testing.T) {
	t.Parallel()
	type visit struct {
		Path string
		Tok  json.Token
	}
	var got []visit
	opts := Options{Visit: func(path string, tok json.Token) { got = append(got, visit{path, tok}) }}
	require.NoError(t, Valid([]byte(`{"a":[1,{"b":null}],"c d":"x"}`), opts))
	require.Equal(t, []visit{
		{"", json.Delim('{')}, {"a", json.Delim('[')}, {"a[0]", json.Number("1")},
		{"a[1]", json.Delim('{')}, {"a[1].b", nil}, {`["c d"]`, "x"},
	}, got)

	got = nil
	require.Error(t, Decode([]byte(`{"Name":1,"count":"x","name":[[[[`), &doc{}, Options{MaxDepth: 3, Visit: opts.Visit}))
	require.Equal(t, []visit{
		{"", json.Delim('{')}, {"Name", json.Number("1")}, {"count", "x"},
		{"name", json.Delim('[')}, {"name[0]", json.Delim('[')}, {"name[0][0]", json.Delim('[')},
	}, got, "values are visited in documents with problems, up to the one that stops the scan")
}

func TestErrorString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "invalid JSON", (&Error{}).Error())
	one := &Error{Problems: []Problem{{Path: "a", Code: CodeWrongType, Message: "must be a string"}}}
	require.Equal(t, "a: must be a string", one.Error())
	require.True(t, one.Has(CodeWrongType))
	require.False(t, one.Has(CodeMalformed))
	var many Error
	for i := range 7 {
		many.Problems = append(many.Problems, Problem{Path: IndexPath("", i), Message: "bad"})
	}
	require.Equal(t, "7 problems: [0]: bad; [1]: bad; [2]: bad; [3]: bad; [4]: bad; and 2 more", many.Error())
	require.Equal(t, "whole", Problem{Message: "whole"}.String())
}

func TestPaths(t *testing.T) {
	t.Parallel()
	redact := func(key string) bool { return key == "secret" }
	tests := []struct{ path, key, want string }{
		{"", "a", "a"},
		{"a", "b_2", "a.b_2"},
		{"", "_x", "_x"},
		{"a", "2b", `a["2b"]`},
		{"a", "", `a[""]`},
		{"a", "b.c", `a["b.c"]`},
		{"a", "é", `a["é"]`},
		{"a", "line\nbreak", `a["line\nbreak"]`},
		{"a", "secret", `a["<redacted>"]`},
		{"", "secret", `["<redacted>"]`},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, MemberPath(tt.path, tt.key, redact), "%q in %q", tt.key, tt.path)
	}
	require.Equal(t, "a", MemberPath("", "a", nil))
	require.Equal(t, `"<redacted>"`, KeyName("secret", redact))
	require.Equal(t, `"a b"`, KeyName("a b", redact))
	require.Equal(t, `"secret"`, KeyName("secret", nil))
	require.Equal(t, "a[3]", IndexPath("a", 3))
	require.Equal(t, "[0]", IndexPath("", 0))
}

func TestQuote(t *testing.T) {
	t.Parallel()
	require.Equal(t, `"a\x00b"`, Quote("a\x00b"))
	require.Equal(t, `"\xff"`, Quote("\xff"))
	s := strings.Repeat("x", 63) + "é"
	require.Equal(t, `"`+strings.Repeat("x", 63)+`"…`, Quote(s), "cut before a character that does not fit")
	require.Equal(t, `"`+strings.Repeat("x", 64)+`"`, Quote(strings.Repeat("x", 64)))
}
