package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// labeledStart is startBody with labels.
func labeledStart(requestID string, labels map[string]string) map[string]any {
	b := startBody(requestID)
	b["labels"] = labels
	return b
}

// approvedLabels reads the labels of run runID's RunApproved.
func (s *stack) approvedLabels(t *testing.T, runID string) map[string]string {
	t.Helper()
	return s.approved(t, runID).Labels
}

// approved returns the payload of run's RunApproved.
func (s *stack) approved(t *testing.T, runID string) events.RunApprovedData {
	t.Helper()
	evs, err := eventlog.New(s.db.Pool).EventsFetchAfter(context.Background(), runID, 0, 1)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, events.RunApproved, evs[0].EventType)
	var d events.RunApprovedData
	require.NoError(t, evs[0].Data(&d))
	return d
}

// badLabels break each of the label rules (api.CheckLabels); their
// problems, in order, are badLabelProblems.
var badLabels = map[string]string{
	"Team":                    "data",
	"-lead":                   "x",
	strings.Repeat("k", 64):   "x",
	"tier":                    strings.Repeat("v", 256),
	"note":                    "a\nb",
	"ok":                      "fine",
	"app.example.com/part-of": "",
}

var badLabelProblems = []api.Problem{
	{Path: `labels["-lead"]`, Code: api.ProblemInvalid, Message: `the key "-lead" must be lowercase letters a-z, digits and '.', '_', '/', '-' inside, starting and ending with a letter or digit`},
	{Path: "labels.Team", Code: api.ProblemInvalid, Message: `the key "Team" must be lowercase letters a-z, digits and '.', '_', '/', '-' inside, starting and ending with a letter or digit`},
	{Path: "labels." + strings.Repeat("k", 64), Code: api.ProblemInvalid, Message: "the key is 64 bytes, more than the limit of 63"},
	{Path: "labels.note", Code: api.ProblemInvalid, Message: "the value must not hold control characters"},
	{Path: "labels.tier", Code: api.ProblemInvalid, Message: "the value is 256 bytes, more than the limit of 255"},
}

// A start whose labels break the rules is refused on every transport, in
// its shape, with a problem at each bad label's path, and nothing is
// written; so is one with more than api.MaxLabels labels.
func TestStartRefusesBadLabelsEachTransport(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	wantStatus := map[string]int{"REST": http.StatusBadRequest, "JSON-RPC": jsonrpc.CodeInvalidParams, "NATS": http.StatusBadRequest}
	for _, r := range startRefusals(t, s, string(mustJSON(t, labeledStart("bad-labels", badLabels)))) {
		require.Equal(t, wantStatus[r.transport], r.status, r.transport)
		require.Equal(t, api.CodeInvalidArgument, r.err.Code, r.transport)
		require.Equal(t, badLabelProblems, problemsOf(t, r.err), r.transport)
		require.Equal(t, "labels", r.err.Details["field"], r.transport)
	}
	many := map[string]string{}
	for i := range api.MaxLabels + 1 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	for _, r := range startRefusals(t, s, string(mustJSON(t, labeledStart("many-labels", many)))) {
		require.Equal(t, []api.Problem{{Path: "labels", Code: api.ProblemInvalid, Message: "has 33 labels, more than the limit of 32"}},
			problemsOf(t, r.err), r.transport)
	}
	for _, r := range startRefusals(t, s, `{"tenantId":"acme","projectId":"p","environmentId":"dev","planId":"hello","planVersion":"1",`+
		`"runRequestId":"typed-labels","plan":`+planDoc+`,"labels":{"n":1}}`) {
		require.Equal(t, api.CodeInvalidArgument, r.err.Code, r.transport)
		require.Equal(t, "labels.n", problemsOf(t, r.err)[0].Path, "%s: a value that is not a string", r.transport)
	}
	require.Zero(t, s.counts(t), "a refused start writes nothing")
}

// A start's labels, at their limits, go into its RunApproved; a repeat
// with the same labels answers its run, and one with other labels (or
// none) conflicts, as a repeat with another input does.
func TestStartLabelsAreRecordedAndIdempotent(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	labels := map[string]string{strings.Repeat("k", api.MaxLabelKeyBytes): strings.Repeat("é", api.MaxLabelValueBytes/2),
		"team": "data", "empty": "", "app.example.com/tier": "batch"}
	for i := len(labels); i < api.MaxLabels; i++ {
		labels[fmt.Sprintf("k%d", i)] = "v"
	}
	a := s.post(t, "/v1/runs", labeledStart("labeled", labels))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	res := decodeAs[api.StartRunResult](t, a.body)
	require.Equal(t, labels, s.approvedLabels(t, res.RunID))

	again := s.post(t, "/v1/runs", labeledStart("labeled", labels))
	require.Equal(t, http.StatusOK, again.status, "%s", again.body)
	require.Equal(t, res.RunID, decodeAs[api.StartRunResult](t, again.body).RunID)

	before := s.counts(t)
	for _, other := range []map[string]string{{"team": "web"}, nil} {
		a := s.post(t, "/v1/runs", labeledStart("labeled", other))
		require.Equal(t, http.StatusConflict, a.status, "%s", a.body)
		require.Equal(t, api.CodeIdempotencyConflict, a.errorBody(t).Code)
	}
	require.Equal(t, before, s.counts(t), "a conflict writes nothing")
}

// A schedule's labels are checked as a start's (nothing stored for a
// refusal, on REST and JSON-RPC), stored, answered, compared by a
// repeated create, replaced by an update, and carried by the runs its
// fires start.
func TestScheduleLabels(t *testing.T) {
	t.Parallel()
	clk := intaketest.NewClock(time.Date(2026, 3, 2, 8, 59, 30, 0, time.UTC))
	s := setup(t, gateway.Config{Intake: gateway.IntakeConfig{Now: clk.Now},
		Schedules: gateway.ScheduleConfig{PollInterval: 10 * time.Millisecond}})
	bad := scheduleBody("labeled", "cron", "* * * * *", "labels", badLabels)
	a := s.post(t, "/v1/schedules", bad)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	require.Equal(t, badLabelProblems, problemsOf(t, a.errorBody(t)))
	r := s.rpcOne(t, `{"jsonrpc":"2.0","method":"schedule.create","params":`+string(mustJSON(t, bad))+`,"id":1}`)
	require.NotNil(t, r.Error)
	require.Equal(t, jsonrpc.CodeInvalidParams, r.Error.Code)
	require.Equal(t, badLabelProblems, problemsOf(t, r.Error.Data))
	require.Zero(t, s.rows(t, "schedules", ""))

	labels := map[string]string{"team": "data", "kind": "nightly"}
	body := scheduleBody("labeled", "cron", "* * * * *", "timezone", nil, "labels", labels, "paused", true)
	a = s.post(t, "/v1/schedules", body)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.Equal(t, labels, decodeAs[api.Schedule](t, a.body).Labels)
	a = s.post(t, "/v1/schedules", scheduleBody("labeled", "cron", "* * * * *", "timezone", nil, "labels", map[string]string{"team": "web"}))
	require.Equal(t, http.StatusConflict, a.status, "another definition: %s", a.body)
	a = s.post(t, "/v1/schedules", body)
	require.Equal(t, http.StatusOK, a.status, "the same definition: %s", a.body)

	labels["team"] = "web"
	body["paused"] = false
	a, err := s.do(t, http.MethodPut, "/v1/schedules/labeled", operatorToken, mustJSON(t, body))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	require.Equal(t, labels, decodeAs[api.Schedule](t, a.body).Labels)

	clk.Set(time.Date(2026, 3, 2, 9, 0, 5, 0, time.UTC))
	var runID string
	require.Eventually(t, func() bool {
		err := s.db.Pool.QueryRow(context.Background(), `SELECT run_id::text FROM run_requests
			WHERE run_request_id = 'labeled:2026-03-02T09:00:00Z'`).Scan(&runID)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, labels, s.approvedLabels(t, runID))
}

// A trigger's labels are checked as a start's (nothing stored for a
// refusal), answered by its get, and carried by the runs its events
// start.
func TestTriggerLabels(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	body := map[string]any{"triggerId": "orders", "tenantId": "acme", "projectId": "p", "environmentId": "dev",
		"plan": json.RawMessage(planDoc), "labels": badLabels}
	a := s.post(t, "/v1/triggers", body)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	require.Equal(t, badLabelProblems, problemsOf(t, a.errorBody(t)))
	require.Zero(t, s.rows(t, "triggers", ""))

	labels := map[string]string{"source": "shop"}
	body["labels"] = labels
	a = s.post(t, "/v1/triggers", body)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	a, err := s.do(t, http.MethodGet, "/v1/triggers/orders", operatorToken, nil)
	require.NoError(t, err)
	require.Equal(t, labels, decodeAs[api.Trigger](t, a.body).Labels)

	a = s.post(t, "/v1/triggers/orders/events", map[string]any{"eventId": "e1", "payload": map[string]any{"n": 1}})
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.Equal(t, labels, s.approvedLabels(t, decodeAs[api.TriggerEventResult](t, a.body).RunID))
}

// A rerun keeps its source's labels.
func TestRerunKeepsLabels(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	labels := map[string]string{"team": "data"}
	a := s.post(t, "/v1/runs", labeledStart("src", labels))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	src := decodeAs[api.StartRunResult](t, a.body).RunID
	intaketest.EndRun(t, s.db.Pool, src, events.RunCompleted)

	a = s.post(t, "/v1/runs/"+src+"/rerun", map[string]any{"fromStepId": "a"})
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
	require.Equal(t, labels, s.approvedLabels(t, decodeAs[api.StartRunResult](t, a.body).RunID))
}
