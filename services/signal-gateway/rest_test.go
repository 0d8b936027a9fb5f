package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/streams"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

func TestRESTStartRunIsIdempotent(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	first := s.post(t, "/v1/runs", startBody("req-1"))
	require.Equal(t, http.StatusCreated, first.status, "%s", first.body)
	var a, b api.StartRunResult
	require.NoError(t, json.Unmarshal(first.body, &a))
	require.False(t, a.Duplicate)
	require.Equal(t, "APPROVED", a.Status)
	require.Equal(t, "false", first.header.Get("Weft-Duplicate"))

	again := s.post(t, "/v1/runs", startBody("req-1"))
	require.Equal(t, http.StatusOK, again.status, "%s", again.body)
	require.NoError(t, json.Unmarshal(again.body, &b))
	require.True(t, b.Duplicate)
	require.Equal(t, a.RunID, b.RunID)
	require.Equal(t, 1, s.counts(t).requests)
}

func TestRESTSignalIsIdempotent(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.run(t)
	body := map[string]any{"signalName": "go", "signalId": "sig-1", "payload": map[string]any{"ok": true}}
	first := s.post(t, "/v1/runs/"+runID+"/signals", body)
	require.Equal(t, http.StatusAccepted, first.status, "%s", first.body)
	require.Equal(t, "false", first.header.Get("Weft-Duplicate"))
	again := s.post(t, "/v1/runs/"+runID+"/signals", body)
	require.Equal(t, http.StatusAccepted, again.status)
	require.Equal(t, "true", again.header.Get("Weft-Duplicate"))

	var r1, r2 api.AcceptedSignalResult
	require.NoError(t, json.Unmarshal(first.body, &r1))
	require.NoError(t, json.Unmarshal(again.body, &r2))
	require.Equal(t, r1, r2, "the canonical result is replayed")
	require.True(t, r1.Accepted)
	require.Equal(t, runID, r1.WorkflowID)
	require.Equal(t, "sig-1", r1.SignalID)
	require.Equal(t, 1, s.counts(t).acceptances)

	// Without a signalId every request is a new signal.
	for range 2 {
		a := s.post(t, "/v1/runs/"+runID+"/signals", map[string]any{"signalName": "go"})
		require.Equal(t, http.StatusAccepted, a.status)
	}
	require.Equal(t, 3, s.counts(t).acceptances)
}

func TestRESTRefusals(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{Intake: intake.Config{MaxSignalPayloadBytes: 64, MaxSignalsPerRunMinute: 2}})
	runID := s.run(t)
	path := "/v1/runs/" + runID + "/signals"

	// 404 for a missing run and for another tenant's run alike.
	missing := s.post(t, "/v1/runs/"+events.NewRunID()+"/signals", map[string]any{"signalName": "go"})
	require.Equal(t, http.StatusNotFound, missing.status)
	require.Equal(t, api.CodeNotFound, missing.errorBody(t).Code)
	foreign, err := s.do(t, http.MethodPost, path, strangerToken, []byte(`{"signalName":"go"}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, foreign.status)

	// 413 for a payload over the limit.
	big := s.post(t, path, map[string]any{"signalName": "go", "payload": strings.Repeat("x", 70)})
	require.Equal(t, http.StatusRequestEntityTooLarge, big.status)
	require.Equal(t, api.CodePayloadTooLarge, big.errorBody(t).Code)

	// 429 with Retry-After past the rate limit.
	for i := range 2 {
		a := s.post(t, path, map[string]any{"signalName": "go", "signalId": string(rune('a' + i))})
		require.Equal(t, http.StatusAccepted, a.status, "%s", a.body)
	}
	limited := s.post(t, path, map[string]any{"signalName": "go", "signalId": "c"})
	require.Equal(t, http.StatusTooManyRequests, limited.status)
	require.Equal(t, api.CodeRateLimited, limited.errorBody(t).Code)
	require.NotEmpty(t, limited.header.Get("Retry-After"))

	// 401 without a key, recording nothing.
	before := s.counts(t)
	anon, err := s.do(t, http.MethodPost, path, "", []byte(`{"signalName":"go","signalId":"z"}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, anon.status)
	require.Equal(t, api.CodeUnauthenticated, anon.errorBody(t).Code)
	require.Equal(t, `Bearer realm="weft"`, anon.header.Get("WWW-Authenticate"))
	bad, err := s.do(t, http.MethodPost, path, "not-a-key", []byte(`{"signalName":"go"}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, bad.status)
	require.Equal(t, before, s.counts(t))

	// A viewer's denial counts against the run's limit, which this run
	// has reached: 429, nothing recorded (issue 17, item 5).
	denied, err := s.do(t, http.MethodPost, path, viewerToken, []byte(`{"signalName":"PAUSE","signalId":"v"}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, denied.status)
	require.Equal(t, before, s.counts(t))

	// 403 for a viewer on a run within its limit, recorded as
	// SignalRejected.
	runID = s.run(t)
	denied, err = s.do(t, http.MethodPost, "/v1/runs/"+runID+"/signals", viewerToken, []byte(`{"signalName":"PAUSE","signalId":"v"}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, denied.status)
	require.Equal(t, api.CodePermissionDenied, denied.errorBody(t).Code)
	evs, err := eventlog.New(s.db.Pool).EventsFetchAfter(context.Background(), runID, 0, 100)
	require.NoError(t, err)
	require.Equal(t, events.SignalRejected, evs[len(evs)-1].EventType)
}

// TestRESTIndeterminate creates the crash-window state by hand: the
// payload is in the log, its acceptance record is not.
func TestRESTIndeterminate(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	runID := s.run(t)
	s.orphanPayload(t, runID, "go", "lost")
	before := s.counts(t)

	a := s.post(t, "/v1/runs/"+runID+"/signals", map[string]any{"signalName": "go", "signalId": "lost", "payload": "xyzzy-second-payload"})
	require.Equal(t, http.StatusConflict, a.status, "%s", a.body)
	e := a.errorBody(t)
	require.Equal(t, api.CodeSignalAcceptanceIndeterminate, e.Code)
	require.Equal(t, runID, e.Details["workflowId"])
	require.Equal(t, "go", e.Details["signalName"])
	require.Equal(t, "lost", e.Details["signalId"])
	require.NotEmpty(t, e.Details["correlationId"])
	require.NotContains(t, string(a.body), "secret-payload")
	require.NotContains(t, string(a.body), "xyzzy")
	require.Equal(t, before, s.counts(t), "nothing enqueued")
}

// orphanPayload appends a SignalAccepted for (runID, name, id) without its
// acceptance record: the state a crash between the two writes would leave
// in a store without transactions.
func (s *stack) orphanPayload(t *testing.T, runID, name, id string) {
	t.Helper()
	ev, err := events.New(events.Spec{RunID: runID, Type: events.SignalAccepted, PlanVersion: "1",
		LogicalAttemptID: "sig:" + runID + ":" + name + ":" + id + ":1",
		Data:             events.SignalAcceptedData{SignalName: name, SignalID: id, Payload: json.RawMessage(`"secret-payload"`)}})
	require.NoError(t, err)
	_, err = eventlogtest.Append(context.Background(), journal.New(eventlog.New(s.db.Pool)), s.db.Pool, nil, ev)
	require.NoError(t, err)
}

func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	a, err := s.do(t, http.MethodGet, "/openapi.json", "", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, a.status)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(a.body, &doc))
	require.Equal(t, "3.1.0", doc["openapi"])
}

// An empty runRequestId is refused, over REST, JSON-RPC and NATS, before
// anything is written; an absent one still starts a run.
func TestEmptyRunRequestIDIsRefused(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	before := s.counts(t)

	a := s.post(t, "/v1/runs", startBody(""))
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	e := a.errorBody(t)
	require.Equal(t, api.CodeInvalidArgument, e.Code)
	require.Equal(t, "runRequestId", e.Details["field"])

	params, err := json.Marshal(startBody(""))
	require.NoError(t, err)
	r := s.rpcOne(t, `{"jsonrpc":"2.0","method":"run.start","params":`+string(params)+`,"id":1}`)
	require.NotNil(t, r.Error)
	require.Equal(t, -32602, r.Error.Code)
	require.Equal(t, "runRequestId", r.Error.Data.Details["field"])

	status, body, _ := s.request(t, streams.RunStartSubject, operatorToken, params)
	require.Equal(t, http.StatusBadRequest, status, "%s", body)
	require.Equal(t, before, s.counts(t), "nothing written")

	absent := startBody("")
	delete(absent, "runRequestId")
	require.Equal(t, http.StatusCreated, s.post(t, "/v1/runs", absent).status)
}
