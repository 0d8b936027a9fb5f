package jsonrpc_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// TestSpecificationExamples runs every example of the specification's
// "Examples" section; want "" means no answer at all.
func TestSpecificationExamples(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, body, want string
		calls            []string
	}{
		{
			name:  "positional params",
			body:  `{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}`,
			want:  `{"jsonrpc": "2.0", "result": 19, "id": 1}`,
			calls: []string{"subtract"},
		},
		{
			name:  "positional params reversed",
			body:  `{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}`,
			want:  `{"jsonrpc": "2.0", "result": -19, "id": 2}`,
			calls: []string{"subtract"},
		},
		{
			name:  "named params",
			body:  `{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}`,
			want:  `{"jsonrpc": "2.0", "result": 19, "id": 3}`,
			calls: []string{"subtract"},
		},
		{
			name:  "named params in another order",
			body:  `{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}`,
			want:  `{"jsonrpc": "2.0", "result": 19, "id": 4}`,
			calls: []string{"subtract"},
		},
		{
			name:  "notification",
			body:  `{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}`,
			calls: []string{"update"},
		},
		{
			name: "notification of a method that does not exist",
			body: `{"jsonrpc": "2.0", "method": "foobar"}`,
		},
		{
			name: "non-existent method",
			body: `{"jsonrpc": "2.0", "method": "foobar", "id": "1"}`,
			want: `{"jsonrpc": "2.0", "error": {"code": -32601, "message": "method \"foobar\" not found"}, "id": "1"}`,
		},
		{
			name: "invalid JSON",
			body: `{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]`,
			want: `{"jsonrpc": "2.0", "error": {"code": -32700, "message": "parse error"}, "id": null}`,
		},
		{
			name: "invalid request object",
			body: `{"jsonrpc": "2.0", "method": 1, "params": "bar"}`,
			want: `{"jsonrpc": "2.0", "error": {"code": -32600,
				"message": "invalid request: member \"method\" must be a string"}, "id": null}`,
		},
		{
			name: "batch, invalid JSON",
			body: `[
				{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
				{"jsonrpc": "2.0", "method"
			]`,
			want: `{"jsonrpc": "2.0", "error": {"code": -32700, "message": "parse error"}, "id": null}`,
		},
		{
			name: "empty array",
			body: `[]`,
			want: `{"jsonrpc": "2.0", "error": {"code": -32600, "message": "invalid request: the batch is empty"}, "id": null}`,
		},
		{
			name: "non-empty invalid batch",
			body: `[1]`,
			want: `[{"jsonrpc": "2.0", "error": {"code": -32600,
				"message": "invalid request: the request must be a JSON object"}, "id": null}]`,
		},
		{
			name: "invalid batch",
			body: `[1,2,3]`,
			want: `[
				{"jsonrpc": "2.0", "error": {"code": -32600, "message": "invalid request: the request must be a JSON object"}, "id": null},
				{"jsonrpc": "2.0", "error": {"code": -32600, "message": "invalid request: the request must be a JSON object"}, "id": null},
				{"jsonrpc": "2.0", "error": {"code": -32600, "message": "invalid request: the request must be a JSON object"}, "id": null}
			]`,
		},
		{
			name: "mixed batch",
			body: `[
				{"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
				{"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
				{"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
				{"foo": "boo"},
				{"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
				{"jsonrpc": "2.0", "method": "get_data", "id": "9"}
			]`,
			want: `[
				{"jsonrpc": "2.0", "result": 7, "id": "1"},
				{"jsonrpc": "2.0", "result": 19, "id": "2"},
				{"jsonrpc": "2.0", "error": {"code": -32600, "message": "invalid request: unknown member \"foo\""}, "id": null},
				{"jsonrpc": "2.0", "error": {"code": -32601, "message": "method \"foo.get\" not found"}, "id": "5"},
				{"jsonrpc": "2.0", "result": ["hello", 5], "id": "9"}
			]`,
			calls: []string{"sum", "notify_hello", "subtract", "get_data"},
		},
		{
			name: "batch of notifications",
			body: `[
				{"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},
				{"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}
			]`,
			calls: []string{"notify_sum", "notify_hello"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, jsonrpc.Options{})
			got := b.serve(t, tt.body)
			if tt.want == "" {
				require.Empty(t, got)
			} else {
				require.JSONEq(t, tt.want, got)
			}
			require.Equal(t, tt.calls, nilIfEmpty(*b.calls))
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
