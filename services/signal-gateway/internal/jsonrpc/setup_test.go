package jsonrpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// bundle is one test's server, the names of the methods it ran, in order,
// and what it logged.
type bundle struct {
	server *jsonrpc.Server
	calls  *[]string
	log    *bytes.Buffer
}

// setup returns a server with the methods of the specification's examples
// and some that fail in each way a method can.
func setup(t *testing.T, opts jsonrpc.Options) bundle {
	t.Helper()
	b := bundle{calls: new([]string), log: new(bytes.Buffer)}
	record := func(name string, m jsonrpc.Method) jsonrpc.Method {
		return func(ctx context.Context, params json.RawMessage) (any, error) {
			*b.calls = append(*b.calls, name)
			return m(ctx, params)
		}
	}
	methods := map[string]jsonrpc.Method{}
	for name, m := range testMethods() {
		methods[name] = record(name, m)
	}
	logger := slog.New(slog.NewTextHandler(b.log, nil))
	s, err := jsonrpc.NewServer(methods, opts, logger)
	require.NoError(t, err)
	b.server = s
	return b
}

// serve runs body and returns the answer as a string, "" for none.
func (b bundle) serve(t *testing.T, body string) string {
	t.Helper()
	resp, ok := b.server.Serve(context.Background(), []byte(body))
	if !ok {
		require.Nil(t, resp, "no answer must come with a nil body")
		return ""
	}
	require.True(t, json.Valid(resp), "answer %s", resp)
	return string(resp)
}

func testMethods() map[string]jsonrpc.Method {
	none := func(context.Context, json.RawMessage) (any, error) { return nil, nil }
	return map[string]jsonrpc.Method{
		"subtract":     subtract,
		"sum":          sum,
		"update":       none,
		"notify_hello": none,
		"notify_sum":   none,
		"nil_result":   none,
		"get_data": func(context.Context, json.RawMessage) (any, error) {
			return []any{"hello", 5}, nil
		},
		"echo": func(_ context.Context, params json.RawMessage) (any, error) {
			return params, nil
		},
		"conflict": func(context.Context, json.RawMessage) (any, error) {
			return nil, fmt.Errorf("sending signal: %w", &jsonrpc.Error{
				Code: jsonrpc.CodeConflict, Message: "signal acceptance is indeterminate",
				Data: map[string]string{"code": "SignalAcceptanceIndeterminate"},
			})
		},
		"plain_error": func(context.Context, json.RawMessage) (any, error) {
			return nil, errors.New("connect to postgres://weft:hunter2@db failed")
		},
		"typed_nil_error": func(context.Context, json.RawMessage) (any, error) {
			var e *jsonrpc.Error
			return nil, e
		},
		"bad_result": func(context.Context, json.RawMessage) (any, error) {
			return make(chan int), nil
		},
		"bad_data": func(context.Context, json.RawMessage) (any, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeNotFound, Message: "no such run", Data: func() {}}
		},
		"named_only": func(_ context.Context, params json.RawMessage) (any, error) {
			var p map[string]any
			if len(params) == 0 || params[0] != '{' || json.Unmarshal(params, &p) != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params must be an object"}
			}
			return p, nil
		},
	}
}

// subtract takes [minuend, subtrahend] or {"minuend":…, "subtrahend":…}.
func subtract(_ context.Context, params json.RawMessage) (any, error) {
	var pos []float64
	if json.Unmarshal(params, &pos) == nil && len(pos) == 2 {
		return pos[0] - pos[1], nil
	}
	var named struct{ Minuend, Subtrahend float64 }
	if err := json.Unmarshal(params, &named); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params"}
	}
	return named.Minuend - named.Subtrahend, nil
}

func sum(_ context.Context, params json.RawMessage) (any, error) {
	var xs []float64
	if err := json.Unmarshal(params, &xs); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params"}
	}
	var total float64
	for _, x := range xs {
		total += x
	}
	return total, nil
}
