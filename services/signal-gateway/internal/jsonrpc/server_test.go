package jsonrpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

const internalError = `{"code":-32603,"message":"internal error"}`

func TestMethodResultsAndErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		method, params, wantResult, wantError string
		logged                                []string
	}{
		{method: "nil_result", wantResult: `null`},
		{method: "echo", params: `{"a":[1,{"b":null}]}`, wantResult: `{"a":[1,{"b":null}]}`},
		{method: "echo", wantResult: `null`},
		{method: "conflict", wantError: `{"code":-32009,"message":"signal acceptance is indeterminate",
			"data":{"code":"SignalAcceptanceIndeterminate"}}`},
		{method: "named_only", params: `[1]`, wantError: `{"code":-32602,"message":"params must be an object"}`},
		{method: "named_only", wantError: `{"code":-32602,"message":"params must be an object"}`},
		{method: "named_only", params: `{"x":1}`, wantResult: `{"x":1}`},
		{method: "plain_error", wantError: internalError,
			logged: []string{"jsonrpc method failed", "method=plain_error", "hunter2"}},
		{method: "typed_nil_error", wantError: internalError, logged: []string{"method=typed_nil_error"}},
		{method: "bad_result", wantError: internalError,
			logged: []string{"jsonrpc result cannot be marshalled", "method=bad_result"}},
		{method: "bad_data", wantError: `{"code":-32004,"message":"no such run"}`,
			logged: []string{"jsonrpc error data cannot be marshalled", "method=bad_data", "code=-32004"}},
	} {
		t.Run(tt.method+tt.params, func(t *testing.T) {
			t.Parallel()
			b := setup(t, jsonrpc.Options{})
			body := `{"jsonrpc":"2.0","method":"` + tt.method + `","id":7}`
			if tt.params != "" {
				body = `{"jsonrpc":"2.0","method":"` + tt.method + `","params":` + tt.params + `,"id":7}`
			}
			got := b.serve(t, body)
			var resp map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(got), &resp))
			require.Len(t, resp, 3, "jsonrpc, id and exactly one of result and error: %s", got)
			require.JSONEq(t, `"2.0"`, string(resp["jsonrpc"]))
			require.Equal(t, `7`, string(resp["id"]))
			if tt.wantError == "" {
				require.JSONEq(t, tt.wantResult, string(resp["result"]))
			} else {
				require.JSONEq(t, tt.wantError, string(resp["error"]))
			}
			require.NotContains(t, got, "hunter2")
			for _, s := range tt.logged {
				require.Contains(t, b.log.String(), s)
			}
			if tt.logged == nil {
				require.Empty(t, b.log.String())
			}
		})
	}
}

func TestNilResultIsSent(t *testing.T) {
	t.Parallel()
	b := setup(t, jsonrpc.Options{})
	require.JSONEq(t, `{"jsonrpc":"2.0","result":null,"id":null}`,
		b.serve(t, `{"jsonrpc":"2.0","method":"nil_result","id":null}`))
}

// batch returns a batch of n requests to get_data with ids 1…n.
func batch(n int) string {
	elems := make([]string, n)
	for i := range elems {
		elems[i] = fmt.Sprintf(`{"jsonrpc":"2.0","method":"get_data","id":%d}`, i+1)
	}
	return "[" + strings.Join(elems, ",") + "]"
}

func TestMaxBatch(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name            string
		maxBatch, limit int
		n               int
		rejected        bool
	}{
		{"default limit", 0, 100, 100, false},
		{"over the default limit", 0, 100, 101, true},
		{"one", 0, 100, 1, false},
		{"own limit", 2, 2, 2, false},
		{"over own limit", 2, 2, 3, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, jsonrpc.Options{MaxBatch: tt.maxBatch})
			got := b.serve(t, batch(tt.n))
			if tt.rejected {
				require.Equal(t, invalid(fmt.Sprintf(
					"the batch has %d elements, more than the limit of %d", tt.n, tt.limit), "null"), got)
				require.Empty(t, *b.calls, "nothing of a rejected batch runs")
				return
			}
			var resps []struct{ ID int }
			require.NoError(t, json.Unmarshal([]byte(got), &resps))
			require.Len(t, resps, tt.n)
			for i, r := range resps {
				require.Equal(t, i+1, r.ID, "answers keep request order")
			}
			require.Len(t, *b.calls, tt.n)
		})
	}
}

func TestBatchElementsRunInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, jsonrpc.Options{})
	got := b.serve(t, `[
		{"jsonrpc":"2.0","method":"plain_error","id":"a"},
		{"jsonrpc":"2.0","method":"update"},
		{"jsonrpc":"2.0","method":"conflict","id":"b"},
		{"jsonrpc":"2.0","method":"nil_result","id":1.0}
	]`)
	require.JSONEq(t, `[`+
		`{"jsonrpc":"2.0","error":`+internalError+`,"id":"a"},`+
		`{"jsonrpc":"2.0","error":{"code":-32009,"message":"signal acceptance is indeterminate",`+
		`"data":{"code":"SignalAcceptanceIndeterminate"}},"id":"b"},`+
		`{"jsonrpc":"2.0","result":null,"id":1.0}]`, got)
	require.True(t, strings.HasSuffix(got, `,"id":1.0}]`), "the id is echoed raw: %s", got)
	require.Equal(t, []string{"plain_error", "update", "conflict", "nil_result"}, *b.calls)
}

func TestNewServerRejectsBadWiring(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, json.RawMessage) (any, error) { return nil, nil }
	logger := slog.New(slog.DiscardHandler)
	for _, tt := range []struct {
		name    string
		methods map[string]jsonrpc.Method
		opts    jsonrpc.Options
		logger  *slog.Logger
	}{
		{"nil logger", nil, jsonrpc.Options{}, nil},
		{"negative MaxBatch", nil, jsonrpc.Options{MaxBatch: -1}, logger},
		{"nil method", map[string]jsonrpc.Method{"run.start": nil}, jsonrpc.Options{}, logger},
		{"empty name", map[string]jsonrpc.Method{"": ok}, jsonrpc.Options{}, logger},
		{"reserved name", map[string]jsonrpc.Method{"rpc.discover": ok}, jsonrpc.Options{}, logger},
	} {
		s, err := jsonrpc.NewServer(tt.methods, tt.opts, tt.logger)
		require.Error(t, err, tt.name)
		require.Nil(t, s, tt.name)
	}
}

func TestNewServerCopiesMethods(t *testing.T) {
	t.Parallel()
	methods := map[string]jsonrpc.Method{}
	s, err := jsonrpc.NewServer(methods, jsonrpc.Options{}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	methods["late"] = func(context.Context, json.RawMessage) (any, error) { return 1, nil }
	resp, ok := s.Serve(context.Background(), []byte(`{"jsonrpc":"2.0","method":"late","id":1}`))
	require.True(t, ok)
	require.JSONEq(t, `{"jsonrpc":"2.0","error":{"code":-32601,"message":"method \"late\" not found"},"id":1}`,
		string(resp))
}

func TestServePassesItsContext(t *testing.T) {
	t.Parallel()
	type key struct{}
	var seen any
	s, err := jsonrpc.NewServer(map[string]jsonrpc.Method{
		"m": func(ctx context.Context, _ json.RawMessage) (any, error) { seen = ctx.Value(key{}); return nil, nil },
	}, jsonrpc.Options{}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	ctx := context.WithValue(context.Background(), key{}, "v")
	_, ok := s.Serve(ctx, []byte(`{"jsonrpc":"2.0","method":"m"}`))
	require.False(t, ok)
	require.Equal(t, "v", seen)
}
