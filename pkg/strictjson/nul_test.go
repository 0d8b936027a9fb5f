package strictjson_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/strictjson"
)

func TestNoNULRefusesStringsAndKeys(t *testing.T) {
	for doc, path := range map[string]string{
		`{"a":"x\u0000y"}`:    "a",
		`{"a":["\u0000"]}`:    "a[0]",
		`{"\u0000":1}`:        "",
		`{"a":{"b\u0000":1}}`: "a",
	} {
		err := strictjson.Valid([]byte(doc), strictjson.Options{NoNUL: true})
		serr, ok := errors.AsType[*strictjson.Error](err)
		require.True(t, ok, "%s: %v", doc, err)
		require.Equal(t, strictjson.CodeNUL, serr.Problems[0].Code, doc)
		require.Equal(t, path, serr.Problems[0].Path, doc)
		require.NoError(t, strictjson.Valid([]byte(doc), strictjson.Options{}), doc)
	}
	for _, doc := range []string{`{"a":"\\u0000"}`, `{"a":"\u0001"}`, `{"a":"x"}`} {
		require.NoError(t, strictjson.Valid([]byte(doc), strictjson.Options{NoNUL: true}), doc)
	}
}

func TestReplaceNULEscapes(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":"x\u0000y"}`:          `{"a":"x\ufffdy"}`,
		`{"\u0000":"\u0000\u0000"}`: `{"\ufffd":"\ufffd\ufffd"}`,
		`{"a":"\\u0000"}`:           `{"a":"\\u0000"}`, // a backslash, then text
		`{"a":"\\\u0000"}`:          `{"a":"\\\ufffd"}`,
		`{"a":"plain"}`:             `{"a":"plain"}`,
	} {
		got := strictjson.ReplaceNULEscapes([]byte(in))
		require.Equal(t, want, string(got), in)
		require.Equal(t, in != want, strictjson.HasNULEscape([]byte(in)), in)
		require.True(t, json.Valid(got), in)
		require.False(t, strictjson.HasNULEscape(got), in)
	}
}
