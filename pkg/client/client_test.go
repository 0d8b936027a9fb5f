package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

func TestStartRunCreated(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{jsonAnswer(t, http.StatusCreated, startResult("echoed", false))},
		client.WithUserAgent("weft-test/1"))

	res, err := b.client.StartRun(context.Background(), startReq())
	require.NoError(t, err)
	require.Equal(t, startResult("echoed", false), *res)

	reqs := b.gw.requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	require.Equal(t, http.MethodPost, r.method)
	require.Equal(t, "/v1/runs", r.escapedPath)
	require.Equal(t, "Bearer "+testToken, r.header.Get("Authorization"))
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, "weft-test/1", r.header.Get("User-Agent"))
	require.Equal(t, "tenant-1", r.body["tenantId"])
	require.Equal(t, "project-1", r.body["projectId"])
	require.Equal(t, "prod", r.body["environmentId"])
	require.Equal(t, "plan-1", r.body["planId"])
	require.Equal(t, "v1", r.body["planVersion"])
	require.Equal(t, map[string]any{"id": "plan-1"}, r.body["plan"])
	require.Equal(t, map[string]any{"n": float64(1)}, r.body["input"])
	requireUUIDv7(t, r.body["runRequestId"])
}

func TestStartRunDuplicateKeepsCallerID(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{jsonAnswer(t, http.StatusOK, startResult("mine-1", true))})
	req := startReq()
	req.RunRequestID = "mine-1"

	res, err := b.client.StartRun(context.Background(), req)
	require.NoError(t, err)
	require.True(t, res.Duplicate)
	require.Equal(t, "run-1", res.RunID)

	reqs := b.gw.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "mine-1", reqs[0].body["runRequestId"])
}

func TestSignalAccepted(t *testing.T) {
	t.Parallel()
	want := acceptedResult("run-1", "PAUSE", "from-gateway")
	b := setup(t, []answer{jsonAnswer(t, http.StatusAccepted, want)})

	res, err := b.client.Signal(context.Background(), "run-1", api.SignalRequest{
		WorkflowID: "run-1", SignalName: "PAUSE", Payload: json.RawMessage(`{"why":"test"}`),
	})
	require.NoError(t, err)
	require.Equal(t, want, *res)

	reqs := b.gw.requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	require.Equal(t, "/v1/runs/run-1/signals", r.escapedPath)
	require.Equal(t, "run-1", r.runID)
	require.Equal(t, "Bearer "+testToken, r.header.Get("Authorization"))
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, client.DefaultUserAgent, r.header.Get("User-Agent"))
	require.NotContains(t, r.body, "workflowId", "REST rejects a body that names the run")
	require.Equal(t, "PAUSE", r.body["signalName"])
	require.Equal(t, map[string]any{"why": "test"}, r.body["payload"])
	requireUUIDv7(t, r.body["signalId"])
}

// A duplicate signal is answered 202 with the first request's result, which
// the client hands back as is.
func TestSignalDuplicateKeepsCallerID(t *testing.T) {
	t.Parallel()
	original := acceptedResult("run-1", "approve", "sig-42")
	b := setup(t, []answer{jsonAnswer(t, http.StatusAccepted, original)})

	res, err := b.client.Signal(context.Background(), "run-1", api.SignalRequest{SignalName: "approve", SignalID: "sig-42"})
	require.NoError(t, err)
	require.Equal(t, original, *res)
	reqs := b.gw.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "sig-42", reqs[0].body["signalId"])
}

func TestSignalEscapesRunID(t *testing.T) {
	t.Parallel()
	const runID = "run/1 ?#%é"
	b := setup(t, []answer{jsonAnswer(t, http.StatusAccepted, acceptedResult(runID, "PAUSE", "s"))})

	_, err := b.client.Signal(context.Background(), runID, api.SignalRequest{SignalName: "PAUSE"})
	require.NoError(t, err)
	reqs := b.gw.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "/v1/runs/"+url.PathEscape(runID)+"/signals", reqs[0].escapedPath)
	require.Equal(t, runID, reqs[0].runID)
}

func TestSignalRefusesBadRequestLocally(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		runID string
		req   api.SignalRequest
	}{
		"empty runID":       {runID: "", req: api.SignalRequest{SignalName: "PAUSE"}},
		"dot runID":         {runID: ".", req: api.SignalRequest{SignalName: "PAUSE"}},
		"dot-dot runID":     {runID: "..", req: api.SignalRequest{SignalName: "PAUSE"}},
		"other workflow id": {runID: "run-1", req: api.SignalRequest{WorkflowID: "run-2", SignalName: "PAUSE"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, []answer{jsonAnswer(t, http.StatusAccepted, acceptedResult("run-1", "PAUSE", "s"))})
			res, err := b.client.Signal(context.Background(), tc.runID, tc.req)
			require.ErrorIs(t, err, client.ErrInvalidRequest)
			require.Nil(t, res)
			require.Empty(t, b.gw.requests())
		})
	}
}

func TestNoTokenSendsNoAuthorization(t *testing.T) {
	t.Parallel()
	gw := newFakeGateway(t, jsonAnswer(t, http.StatusCreated, startResult("x", false)))
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	require.NoError(t, err)

	_, err = c.StartRun(context.Background(), startReq())
	require.NoError(t, err)
	reqs := gw.requests()
	require.Len(t, reqs, 1)
	require.Empty(t, reqs[0].header.Values("Authorization"))
}

func TestBaseURLPathPrefix(t *testing.T) {
	t.Parallel()
	gw := newFakeGateway(t, jsonAnswer(t, http.StatusCreated, startResult("x", false)))
	srv := httptest.NewServer(http.StripPrefix("/weft", gw))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL + "/weft/")
	require.NoError(t, err)

	_, err = c.StartRun(context.Background(), startReq())
	require.NoError(t, err)
	require.Len(t, gw.requests(), 1)
}

func TestUnexpectedSuccessBody(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"not JSON":  "<html>ok</html>",
		"too large": `{"runId":"` + strings.Repeat("x", client.MaxResponseBytes) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, []answer{{status: http.StatusCreated, body: body}})
			res, err := b.client.StartRun(context.Background(), startReq())
			require.ErrorIs(t, err, client.ErrUnexpectedResponse)
			require.Nil(t, res)
			require.Len(t, b.gw.requests(), 1, "an answered request is not retried")
		})
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	const ok = "http://localhost:8080"
	for name, tc := range map[string]struct {
		url  string
		opts []client.Option
	}{
		"unparsable URL":       {url: "http://[::1"},
		"no scheme":            {url: "localhost:8080"},
		"ftp scheme":           {url: "ftp://localhost"},
		"no host":              {url: "http:///v1"},
		"credentials":          {url: "http://user:pw@localhost"},
		"query":                {url: ok + "?a=b"},
		"fragment":             {url: ok + "#x"},
		"empty token":          {url: ok, opts: []client.Option{client.WithToken("")}},
		"token with newline":   {url: ok, opts: []client.Option{client.WithToken("a\nb")}},
		"empty user agent":     {url: ok, opts: []client.Option{client.WithUserAgent("")}},
		"nil http client":      {url: ok, opts: []client.Option{client.WithHTTPClient(nil)}},
		"zero attempts":        {url: ok, opts: []client.Option{client.WithRetry(client.RetryPolicy{MaxAttempts: -1})}},
		"negative backoff":     {url: ok, opts: []client.Option{client.WithRetry(client.RetryPolicy{InitialBackoff: -1})}},
		"max below initial":    {url: ok, opts: []client.Option{client.WithRetry(client.RetryPolicy{InitialBackoff: 10e9})}},
		"multiplier below one": {url: ok, opts: []client.Option{client.WithRetry(client.RetryPolicy{Multiplier: 0.5})}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := client.New(tc.url, tc.opts...)
			require.ErrorIs(t, err, client.ErrInvalidConfig)
			require.Nil(t, c)
		})
	}
}

func TestNewAcceptsValidConfig(t *testing.T) {
	t.Parallel()
	c, err := client.New("https://weft.example.com/prefix/",
		client.WithToken("k"), client.WithUserAgent("ua"), client.WithHTTPClient(&http.Client{}),
		client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	require.NoError(t, err)
	require.NotNil(t, c)
}
