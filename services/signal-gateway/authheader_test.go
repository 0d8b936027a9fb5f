package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/streams"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// twoKeys are the Authorization values of a request that carries two:
// both valid keys, so only the rule "exactly one value" can refuse it.
var twoKeys = []string{"Bearer " + operatorToken, "Bearer " + viewerToken}

// A request with more than one Authorization value is refused with 400 in
// each transport's shape, before anything is persisted, whichever copy a
// proxy would have picked.
func TestMultipleAuthorizationRefused(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.run(t)
	before := s.counts(t)
	msg := auth.ErrMultipleCredentials.Error()

	signal := []byte(`{"signalName":"go","signalId":"two-keys"}`)
	a := s.postValues(t, "/v1/runs/"+runID+"/signals", signal)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	require.Equal(t, api.CodeInvalidArgument, a.errorBody(t).Code)
	require.Contains(t, a.errorBody(t).Message, msg)

	a = s.postValues(t, "/rpc", rpcCall("signal.send", signalParams(runID, string(signal))))
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	var r rpcAnswer
	require.NoError(t, json.Unmarshal(a.body, &r), "%s", a.body)
	require.NotNil(t, r.Error, "%s", a.body)
	require.Contains(t, r.Error.Message, msg)
	require.NotNil(t, r.Error.Data, "%s", a.body)
	require.Equal(t, api.CodeInvalidArgument, r.Error.Data.Code)

	subject, err := streams.SignalSubject(runID)
	require.NoError(t, err)
	m := nats.NewMsg(subject)
	m.Data = signal
	for _, v := range twoKeys {
		m.Header.Add("Authorization", v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reply, err := s.nc.RequestMsgWithContext(ctx, m)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(http.StatusBadRequest), reply.Header.Get(gateway.HeaderStatus), "%s", reply.Data)
	var e api.ErrorBody
	require.NoError(t, json.Unmarshal(reply.Data, &e), "%s", reply.Data)
	require.Equal(t, api.CodeInvalidArgument, e.Error.Code)
	require.Contains(t, e.Error.Message, msg)

	require.Equal(t, before, s.counts(t), "nothing is persisted")
}

// postValues POSTs body as JSON to path with both twoKeys values.
func (s *stack) postValues(t *testing.T, path string, body []byte) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.base+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for _, v := range twoKeys {
		req.Header.Add("Authorization", v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}
