package strictjson

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecode checks that Decode and Valid never panic; that what Decode
// accepts encoding/json decodes to the same value; that Decode and Valid
// agree on what is not a matter of the type (syntax, UTF-8, depth,
// duplicate keys), which they would not if the scan lost its place in the
// token stream; and that Decode never leaves to its final json.Unmarshal
// an error the scan should have found: doc has no field encoding/json
// cannot decode into, so every rejection must come from the scan.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"name":"n","count":1,"steps":[{"id":"a","retry":{"maxAttempts":3},"input":{"x":[1,"\u003c",{"y":null}]}}]}`,
		`{"at":"2024-05-01T10:00:00Z","wait":"1s","limits":{"max":2},"level":"low","blob":"aGk=","pair":[1,2]}`,
		`{"byId":{"1":"a"},"byLevel":{"high":2},"any":[1e300,{"a":"b"}],"quoted":"7","qs":"\"s\"","num":"1"}`,
		`{"extra":{"a":{"v":1},"b":null},"inner":1,"deep":false,"Untag":"u","small":-128,"size":0}`,
		`{"name":"\ud83d\ude00","ratio":1e308,"ratio32":1e38,"on":true}`,
		`{"quoted":{"a":[1]},"level":[{}],"wait":{"b":2},"limits":[3]}`,
		`{"name":"a","name":"b"}`, `{"Name":1}`, `[]`, `[{"a":1,"a":1}]`, `{} {}`, `{"count":1e400}`, `{"wait":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := Options{MaxDepth: 16}
		validErr := Valid(data, opts)
		if validErr == nil {
			require.True(t, json.Valid(data), "Valid accepted %q", data)
		}
		var got doc
		err := Decode(data, &got, opts)
		if whole, ok := documentProblems(t, err); ok {
			valid, _ := documentProblems(t, validErr)
			require.Equal(t, valid, whole, "%q: Valid: %v; Decode: %v", data, validErr, err)
		}
		if err != nil {
			for _, p := range problemsOf(t, err) {
				if p.Path == "" && p.Code == CodeWrongType {
					require.Failf(t, "the final decode failed after a clean scan", "%q: %v", data, err)
				}
			}
			return
		}
		var want doc
		require.NoError(t, json.Unmarshal(data, &want), "%q", data)
		require.Equal(t, want, got)
	})
}

// documentProblems returns the problems in err that do not depend on the
// type checked against: all but unknown fields and values of the wrong
// type. It reports false when it cannot tell them all, because the scan
// stopped at a top level that is not an object or at too many problems.
func documentProblems(t *testing.T, err error) ([]Problem, bool) {
	t.Helper()
	if err == nil {
		return nil, true
	}
	ps := problemsOf(t, err)
	if len(ps) >= DefaultMaxProblems {
		return nil, false
	}
	var out []Problem
	for _, p := range ps {
		switch {
		case p.Code == CodeUnknownField, p.Code == CodeWrongType:
		case p.Code == CodeMalformed && p.Message == "a document must be a JSON object":
			return nil, false
		default:
			out = append(out, p)
		}
	}
	return out, true
}
