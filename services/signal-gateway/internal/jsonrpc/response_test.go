package jsonrpc_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

func TestParseErrorResponse(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		message string
		data    any
		want    string
	}{
		{"", nil, `{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error"},"id":null}`},
		{"duplicate key \"id\"", map[string]int{"offset": 12},
			`{"jsonrpc":"2.0","error":{"code":-32700,"message":"duplicate key \"id\"","data":{"offset":12}},"id":null}`},
		{"bad", make(chan int), `{"jsonrpc":"2.0","error":{"code":-32700,"message":"bad"},"id":null}`},
	} {
		require.Equal(t, tt.want, string(jsonrpc.ParseErrorResponse(tt.message, tt.data)), tt.message)
	}
}

func TestErrorResponse(t *testing.T) {
	t.Parallel()
	unauth := &jsonrpc.Error{Code: jsonrpc.CodeUnauthenticated, Message: "unauthenticated",
		Data: map[string]string{"code": "Unauthenticated"}}
	const unauthJSON = `{"code":-32001,"message":"unauthenticated","data":{"code":"Unauthenticated"}}`
	for _, tt := range []struct {
		id   json.RawMessage
		e    *jsonrpc.Error
		want string
	}{
		{nil, unauth, `{"jsonrpc":"2.0","error":` + unauthJSON + `,"id":null}`},
		{json.RawMessage(`"<x>"`), unauth, `{"jsonrpc":"2.0","error":` + unauthJSON + `,"id":"<x>"}`},
		{json.RawMessage(`1.0`), unauth, `{"jsonrpc":"2.0","error":` + unauthJSON + `,"id":1.0}`},
		{json.RawMessage(`{`), unauth, `{"jsonrpc":"2.0","error":` + internalError + `,"id":null}`},
		{json.RawMessage(`1`), nil, `{"jsonrpc":"2.0","error":` + internalError + `,"id":null}`},
	} {
		require.Equal(t, tt.want, string(jsonrpc.ErrorResponse(tt.id, tt.e)), string(tt.id))
	}
}

func TestError(t *testing.T) {
	t.Parallel()
	e := &jsonrpc.Error{Code: jsonrpc.CodeNotFound, Message: "no such run"}
	require.EqualError(t, e, "jsonrpc error -32004: no such run")
	b, err := json.Marshal(e)
	require.NoError(t, err)
	require.JSONEq(t, `{"code":-32004,"message":"no such run"}`, string(b), "nil data is omitted")
	var got *jsonrpc.Error
	require.ErrorAs(t, fmt.Errorf("wrapped: %w", e), &got)
	require.Same(t, e, got)
}

func TestCodes(t *testing.T) {
	t.Parallel()
	require.Equal(t, []int{-32700, -32600, -32601, -32602, -32603}, []int{
		jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeMethodNotFound,
		jsonrpc.CodeInvalidParams, jsonrpc.CodeInternalError,
	})
	require.Equal(t, []int{-32001, -32003, -32004, -32009, -32013, -32029, -32053}, []int{
		jsonrpc.CodeUnauthenticated, jsonrpc.CodePermissionDenied, jsonrpc.CodeNotFound, jsonrpc.CodeConflict,
		jsonrpc.CodePayloadTooLarge, jsonrpc.CodeRateLimited, jsonrpc.CodeUnavailable,
	})
}
