package gateway_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/streams"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// TestGatewayMetrics sends signals over each transport and reads the
// counters back: a signal accepted, its repeat a duplicate, a denied one
// rejected, each under its transport; and the events the gateway appended
// (RunApproved, SignalAccepted, SignalRejected) by type.
func TestGatewayMetrics(t *testing.T) {
	t.Parallel()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	s := setup(t, gateway.Config{MeterProvider: mp})
	runID := s.run(t)

	sig := map[string]any{"signalName": "go", "signalId": "m-1"}
	a := s.post(t, "/v1/runs/"+runID+"/signals", sig)
	require.Equal(t, http.StatusAccepted, a.status, "%s", a.body)
	a = s.post(t, "/v1/runs/"+runID+"/signals", sig)
	require.Equal(t, http.StatusAccepted, a.status, "%s", a.body)
	denied, err := s.do(t, http.MethodPost, "/v1/runs/"+runID+"/signals", viewerToken, []byte(`{"signalName":"go","signalId":"m-2"}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, denied.status, "%s", denied.body)

	r := s.rpcOne(t, `{"jsonrpc":"2.0","method":"signal.send","params":{"workflowId":"`+runID+`","signalName":"go","signalId":"m-1"},"id":1}`)
	require.Nil(t, r.Error)
	subject, err := streams.SignalSubject(runID)
	require.NoError(t, err)
	status, body, _ := s.request(t, subject, operatorToken, []byte(`{"signalName":"go","signalId":"m-3"}`))
	require.Equal(t, http.StatusAccepted, status, "%s", body)

	sc := metricstest.Get(t, h)
	signals := func(outcome, transport string) int64 {
		v, _ := sc.Sum("weft_gateway_signals_total", map[string]string{"outcome": outcome, "transport": transport})
		return int64(v)
	}
	require.Equal(t, int64(1), signals("accepted", "http"))
	require.Equal(t, int64(1), signals("duplicate", "http"))
	require.Equal(t, int64(1), signals("rejected", "http"))
	require.Equal(t, int64(1), signals("duplicate", "jsonrpc"))
	require.Equal(t, int64(1), signals("accepted", "nats"))
	require.Equal(t, int64(5), sc.Count(t, "weft_gateway_signals_total", nil))

	appended := func(typ string) int64 {
		return sc.Count(t, "weft_events_appended_total", map[string]string{"event_type": typ})
	}
	require.Equal(t, int64(1), appended("RunApproved"))
	require.Equal(t, int64(2), appended("SignalAccepted"))
	require.Equal(t, int64(1), appended("SignalRejected"))
}
