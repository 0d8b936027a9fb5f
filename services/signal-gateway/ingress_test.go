package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
	"github.com/weftrun/weft/pkg/streams"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// request sends a NATS request with the token and returns the reply's
// status header and body.
func (s *stack) request(t *testing.T, subject, token string, body []byte) (int, []byte, nats.Header) {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Data = body
	if token != "" {
		m.Header.Set("Authorization", "Bearer "+token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reply, err := s.nc.RequestMsgWithContext(ctx, m)
	require.NoError(t, err)
	status, err := strconv.Atoi(reply.Header.Get(gateway.HeaderStatus))
	require.NoError(t, err)
	return status, reply.Data, reply.Header
}

func TestNATSIngress(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	start, err := json.Marshal(startBody("nats-1"))
	require.NoError(t, err)
	status, body, _ := s.request(t, streams.RunStartSubject, operatorToken, start)
	require.Equal(t, http.StatusCreated, status, "%s", body)
	var run api.StartRunResult
	require.NoError(t, json.Unmarshal(body, &run))
	status, _, _ = s.request(t, streams.RunStartSubject, operatorToken, start)
	require.Equal(t, http.StatusOK, status, "a repeated start is a duplicate")

	subject, err := streams.SignalSubject(run.RunID)
	require.NoError(t, err)
	sig := []byte(`{"signalName":"go","signalId":"n-1"}`)
	status, first, hdr := s.request(t, subject, operatorToken, sig)
	require.Equal(t, http.StatusAccepted, status, "%s", first)
	require.Equal(t, "false", hdr.Get(gateway.HeaderDuplicate))
	status, again, hdr := s.request(t, subject, operatorToken, sig)
	require.Equal(t, http.StatusAccepted, status)
	require.Equal(t, "true", hdr.Get(gateway.HeaderDuplicate))
	require.JSONEq(t, string(first), string(again))

	// A plain publish (no reply) takes effect too.
	m := nats.NewMsg(subject)
	m.Data = []byte(`{"signalName":"go","signalId":"n-2"}`)
	m.Header.Set("Authorization", "Bearer "+operatorToken)
	require.NoError(t, s.nc.PublishMsg(m))
	require.Eventually(t, func() bool { return s.counts(t).acceptances == 2 }, 10*time.Second, 20*time.Millisecond)
}

func TestNATSIngressRefusals(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.run(t)
	before := s.counts(t)
	cases := []struct {
		name, subject, token, body string
		status                     int
		code                       string
	}{
		{"no key", "weft.signals." + runID, "", `{"signalName":"go"}`, http.StatusUnauthorized, api.CodeUnauthenticated},
		{"two-token run id", "weft.signals." + runID + ".x", operatorToken, `{"signalName":"go"}`, http.StatusBadRequest, api.CodeInvalidArgument},
		{"run id not a UUID", "weft.signals.run-1", operatorToken, `{"signalName":"go"}`, http.StatusBadRequest, api.CodeInvalidArgument},
		{"another tenant's run", "weft.signals." + runID, strangerToken, `{"signalName":"go"}`, http.StatusNotFound, api.CodeNotFound},
		{"unknown field", "weft.signals." + runID, operatorToken, `{"signalName":"go","workflowId":"x"}`, http.StatusBadRequest, api.CodeInvalidArgument},
		{"invalid JSON", "weft.signals." + runID, operatorToken, `{"signalName":`, http.StatusBadRequest, api.CodeInvalidArgument},
		{"empty signalId", "weft.signals." + runID, operatorToken, `{"signalName":"go","signalId":""}`, http.StatusBadRequest, api.CodeInvalidArgument},
		{"bad start", streams.RunStartSubject, operatorToken, `{"tenantId":"acme"}`, http.StatusBadRequest, api.CodeInvalidArgument},
		{"payload number jsonb cannot hold", "weft.signals." + runID, operatorToken, `{"signalName":"go","payload":{"n":1e131072}}`, http.StatusBadRequest, api.CodeInvalidArgument},
		{"input number jsonb cannot hold", streams.RunStartSubject, operatorToken,
			strings.Replace(goodStart, `"input":{"n":1}`, `"input":{"n":1e-16384}`, 1), http.StatusBadRequest, api.CodeInvalidArgument},
	}
	for _, c := range cases {
		status, body, _ := s.request(t, c.subject, c.token, []byte(c.body))
		require.Equal(t, c.status, status, "%s: %s", c.name, body)
		var e api.ErrorBody
		require.NoError(t, json.Unmarshal(body, &e), c.name)
		require.Equal(t, c.code, e.Error.Code, c.name)
		require.NotEmpty(t, e.Error.Message, c.name)
	}
	require.Equal(t, before, s.counts(t), "nothing persisted")
}

// TestCrossTransportDuplicates sends one signal by REST, JSON-RPC, NATS and
// the Go client: the first accepts, the others replay its result.
func TestCrossTransportDuplicates(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.run(t)
	var results []api.AcceptedSignalResult
	decode := func(raw []byte) {
		var r api.AcceptedSignalResult
		require.NoError(t, json.Unmarshal(raw, &r), "%s", raw)
		results = append(results, r)
	}
	a := s.post(t, "/v1/runs/"+runID+"/signals", map[string]any{"signalName": "go", "signalId": "x-1", "payload": 1})
	require.Equal(t, http.StatusAccepted, a.status, "%s", a.body)
	decode(a.body)

	r := s.rpcOne(t, `{"jsonrpc":"2.0","method":"signal.send","params":{"workflowId":"`+runID+`","signalName":"go","signalId":"x-1","payload":2},"id":7}`)
	require.Nil(t, r.Error)
	decode(r.Result)

	_, body, _ := s.request(t, "weft.signals."+runID, operatorToken, []byte(`{"signalName":"go","signalId":"x-1"}`))
	decode(body)

	c, err := client.New(s.base, client.WithToken(operatorToken))
	require.NoError(t, err)
	res, err := c.Signal(context.Background(), runID, api.SignalRequest{SignalName: "go", SignalID: "x-1"})
	require.NoError(t, err)
	results = append(results, *res)

	for _, r := range results[1:] {
		require.Equal(t, results[0], r)
	}
	require.Equal(t, 1, s.counts(t).acceptances)
}

// TestClientAgainstGateway drives the real gateway with pkg/client.
func TestClientAgainstGateway(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	ctx := context.Background()
	c, err := client.New(s.base, client.WithToken(operatorToken))
	require.NoError(t, err)
	req := api.StartRunRequest{TenantID: "acme", ProjectID: "p", EnvironmentID: "dev", PlanID: "hello", PlanVersion: "1",
		Plan: json.RawMessage(planDoc)}
	run, err := c.StartRun(ctx, req)
	require.NoError(t, err)
	require.NotEmpty(t, run.RunRequestID, "the client chose a run request id")
	req.RunRequestID = run.RunRequestID
	dup, err := c.StartRun(ctx, req)
	require.NoError(t, err)
	require.True(t, dup.Duplicate)
	require.Equal(t, run.RunID, dup.RunID)

	sig, err := c.Signal(ctx, run.RunID, api.SignalRequest{SignalName: "go"})
	require.NoError(t, err)
	require.NotEmpty(t, sig.SignalID, "the client chose a signal id")

	s.orphanPayload(t, run.RunID, "go", "lost")
	_, err = c.Signal(ctx, run.RunID, api.SignalRequest{SignalName: "go", SignalID: "lost"})
	var cerr *client.Error
	require.ErrorAs(t, err, &cerr)
	require.Equal(t, api.CodeSignalAcceptanceIndeterminate, cerr.Code)
	require.Equal(t, http.StatusConflict, cerr.Status)
	require.True(t, client.IsCode(err, api.CodeSignalAcceptanceIndeterminate))

	_, err = c.Signal(ctx, run.RunID, api.SignalRequest{SignalName: "go", SignalID: ""}) // generated again
	require.NoError(t, err)
	viewer, err := client.New(s.base, client.WithToken(viewerToken))
	require.NoError(t, err)
	_, err = viewer.Signal(ctx, run.RunID, api.SignalRequest{SignalName: "go"})
	require.True(t, client.IsCode(err, api.CodePermissionDenied), "%v", err)
}
