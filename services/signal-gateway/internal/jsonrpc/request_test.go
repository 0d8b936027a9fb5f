package jsonrpc_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// invalid is the answer to an invalid request with the given id.
func invalid(reason, id string) string {
	return `{"jsonrpc":"2.0","error":{"code":-32600,"message":"invalid request: ` + reason + `"},"id":` + id + `}`
}

func TestInvalidRequestsAreAnsweredAndNotRun(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, body, want string
	}{
		{"method name is case-sensitive", `{"jsonrpc":"2.0","Method":"echo","id":1}`,
			invalid(`unknown member \"Method\"`, "1")},
		{"jsonrpc name is case-sensitive", `{"JSONRPC":"2.0","method":"echo","id":1}`,
			invalid(`unknown member \"JSONRPC\"`, "1")},
		{"id name is case-sensitive", `{"jsonrpc":"2.0","method":"echo","ID":1}`,
			invalid(`unknown member \"ID\"`, "null")},
		{"unknown member", `{"jsonrpc":"2.0","method":"echo","id":"a","extra":true}`,
			invalid(`unknown member \"extra\"`, `"a"`)},
		{"unknown members are sorted", `{"jsonrpc":"2.0","method":"echo","z":1,"a":2}`,
			invalid(`unknown members \"a\", \"z\"`, "null")},
		{"jsonrpc missing", `{"method":"echo","id":1}`, invalid(`member \"jsonrpc\" is missing`, "1")},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","method":"echo","id":1}`,
			invalid(`member \"jsonrpc\" must be exactly \"2.0\"`, "1")},
		{"jsonrpc a number", `{"jsonrpc":2.0,"method":"echo","id":1}`,
			invalid(`member \"jsonrpc\" must be exactly \"2.0\"`, "1")},
		{"jsonrpc null", `{"jsonrpc":null,"method":"echo","id":1}`,
			invalid(`member \"jsonrpc\" must be exactly \"2.0\"`, "1")},
		{"method missing", `{"jsonrpc":"2.0","id":1}`, invalid(`member \"method\" is missing`, "1")},
		{"method null", `{"jsonrpc":"2.0","method":null,"id":1}`, invalid(`member \"method\" must be a string`, "1")},
		{"params a string", `{"jsonrpc":"2.0","method":"echo","params":"x","id":1}`,
			invalid(`member \"params\" must be an object or an array`, "1")},
		{"params null", `{"jsonrpc":"2.0","method":"echo","params":null,"id":1}`,
			invalid(`member \"params\" must be an object or an array`, "1")},
		{"invalid request without id is answered", `{"jsonrpc":"2.0","method":"echo","params":5}`,
			invalid(`member \"params\" must be an object or an array`, "null")},
		{"id an object", `{"jsonrpc":"2.0","method":"echo","id":{"a":1}}`,
			invalid(`member \"id\" must be a string, a number or null`, "null")},
		{"id an array", `{"jsonrpc":"2.0","method":"echo","id":[1]}`,
			invalid(`member \"id\" must be a string, a number or null`, "null")},
		{"id a bool", `{"jsonrpc":"2.0","method":"echo","id":true}`,
			invalid(`member \"id\" must be a string, a number or null`, "null")},
		{"body a string", `"abc"`, invalid("the request must be a JSON object", "null")},
		{"body a number", `5`, invalid("the request must be a JSON object", "null")},
		{"body null", `null`, invalid("the request must be a JSON object", "null")},
		{"batch element null", `[null]`, "[" + invalid("the request must be a JSON object", "null") + "]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, jsonrpc.Options{})
			require.Equal(t, tt.want, b.serve(t, tt.body))
			require.Empty(t, *b.calls)
		})
	}
}

func TestParseError(t *testing.T) {
	t.Parallel()
	const want = `{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error"},"id":null}`
	for _, body := range []string{``, ` `, `{`, `[1,`, `{"a":1} x`, "\"\xff\"", `{'a':1}`} {
		b := setup(t, jsonrpc.Options{})
		require.JSONEq(t, want, b.serve(t, body), body)
	}
}

// TestIDIsEchoedRaw checks the id comes back byte for byte, whatever its
// spelling, and that only a missing id makes a notification.
func TestIDIsEchoedRaw(t *testing.T) {
	t.Parallel()
	for _, id := range []string{
		`1`, `1.0`, `-0`, `1e3`, `1.5E-7`, `12345678901234567890123456789`,
		`"abc"`, `""`, `"\u0041\n"`, `"<a&b>"`, `"\u2028"`, "\"\u2028\"", `null`,
	} {
		b := setup(t, jsonrpc.Options{})
		got := b.serve(t, `{"jsonrpc":"2.0","method":"get_data","id": `+id+` }`)
		require.Equal(t, `{"jsonrpc":"2.0","result":["hello",5],"id":`+id+`}`, got)
	}
}

func TestNotificationsAreRunButNeverAnswered(t *testing.T) {
	t.Parallel()
	for _, method := range []string{
		"echo", "nil_result", "conflict", "plain_error", "bad_result", "bad_data", "named_only", "missing",
	} {
		b := setup(t, jsonrpc.Options{})
		require.Empty(t, b.serve(t, `{"jsonrpc":"2.0","method":"`+method+`","params":[1]}`), method)
		if method != "missing" {
			require.Equal(t, []string{method}, *b.calls, method)
		}
	}
}
