package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

func TestSignalAcceptanceIndeterminate(t *testing.T) {
	t.Parallel()
	details := map[string]any{"signalId": "sig-1"}
	b := setup(t, []answer{errAnswer(t, http.StatusConflict, api.CodeSignalAcceptanceIndeterminate,
		"cannot tell whether this is a repeat", details)})

	res, err := b.client.Signal(context.Background(), "run-1", api.SignalRequest{SignalName: "approve", SignalID: "sig-1"})
	require.Nil(t, res)
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, client.Error{
		Status: http.StatusConflict, Code: api.CodeSignalAcceptanceIndeterminate,
		Message: "cannot tell whether this is a repeat", Details: details,
	}, *e)
	require.True(t, client.IsCode(err, api.CodeSignalAcceptanceIndeterminate))
	require.False(t, client.IsCode(err, api.CodeNotFound))
	require.ErrorContains(t, err, api.CodeSignalAcceptanceIndeterminate)
	require.ErrorContains(t, err, "409")
}

func TestErrorBodyNotOfErrorShape(t *testing.T) {
	t.Parallel()
	long := "x" + strings.Repeat("é", 300) // the cut at 256 bytes splits an é
	for name, tc := range map[string]struct {
		status      int
		body        string
		wantMessage string
	}{
		"html":            {status: 502, body: "<html>Bad Gateway</html>\n", wantMessage: "<html>Bad Gateway</html>"},
		"empty":           {status: 504, body: "", wantMessage: "Gateway Timeout"},
		"other JSON":      {status: 400, body: `{"message":"nope"}`, wantMessage: `{"message":"nope"}`},
		"error sans code": {status: 500, body: `{"error":{"message":"x"}}`, wantMessage: `{"error":{"message":"x"}}`},
		"long":            {status: 500, body: long, wantMessage: long[:255] + "…"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, []answer{{status: tc.status, body: tc.body}},
				client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
			_, err := b.client.StartRun(context.Background(), startReq())
			var e *client.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, tc.status, e.Status)
			require.Empty(t, e.Code)
			require.Equal(t, tc.wantMessage, e.Message)
			require.ErrorContains(t, err, fmt.Sprint(tc.status))
		})
	}
}

func TestErrorString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "client: NotFound (HTTP 404): no such run",
		(&client.Error{Status: 404, Code: api.CodeNotFound, Message: "no such run"}).Error())
	require.Equal(t, "client: HTTP 502: Bad Gateway", (&client.Error{Status: 502, Message: "Bad Gateway"}).Error())
}

func TestIsCode(t *testing.T) {
	t.Parallel()
	e := &client.Error{Status: 429, Code: api.CodeRateLimited}
	require.True(t, client.IsCode(e, api.CodeRateLimited))
	require.True(t, client.IsCode(fmt.Errorf("wrapped: %w", e), api.CodeRateLimited))
	require.False(t, client.IsCode(e, api.CodeOverloaded))
	require.False(t, client.IsCode(errors.New("plain"), api.CodeRateLimited))
	require.False(t, client.IsCode(nil, ""))
}
