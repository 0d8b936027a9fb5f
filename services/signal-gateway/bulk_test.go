package gateway_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// bulkStack is a gateway whose bulk runner looks for work often.
func bulkStack(t *testing.T) *stack {
	t.Helper()
	return setup(t, gateway.Config{DisableScheduler: true, Bulk: gateway.BulkConfig{PollInterval: 10 * time.Millisecond, Batch: 2}})
}

// labeledRuns starts n runs with labels over REST and writes their
// snapshots as the projector does, RUNNING; it returns their ids.
func (s *stack) labeledRuns(t *testing.T, n int, labels map[string]string) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		a := s.post(t, "/v1/runs", labeledStart(events.NewRunID(), labels))
		require.Equal(t, http.StatusCreated, a.status, "%s", a.body)
		ids[i] = decodeAs[api.StartRunResult](t, a.body).RunID
		intaketest.PutSnapshot(t, s.db.Pool, ids[i], events.RunStatusRunning, string(mustJSON(t, labels)), time.Now())
	}
	return ids
}

// cancels counts the CANCEL signals accepted in each run's log.
func (s *stack) cancels(t *testing.T, runs []string) map[string]int {
	t.Helper()
	return intaketest.SignalsAccepted(t, s.db.Pool, runs, "CANCEL")
}

// getBulk reads job id over REST as the operator.
func (s *stack) getBulk(t *testing.T, id string) answer {
	t.Helper()
	a, err := s.do(t, http.MethodGet, "/v1/bulk/"+id, operatorToken, nil)
	require.NoError(t, err)
	return a
}

// awaitBulk follows job id with read until it is no longer RUNNING.
func awaitBulk(t *testing.T, read func() api.BulkJob) api.BulkJob {
	t.Helper()
	var job api.BulkJob
	require.Eventually(t, func() bool {
		job = read()
		return job.Status != api.BulkRunning
	}, 30*time.Second, 10*time.Millisecond)
	return job
}

// requireCancelledOnce requires each of want to hold one CANCEL, and
// none of others to hold any.
func (s *stack) requireCancelledOnce(t *testing.T, want, others []string) {
	t.Helper()
	got := s.cancels(t, append(append([]string{}, want...), others...))
	require.Len(t, got, len(want), "only the matched runs are signalled: %v", got)
	for _, id := range want {
		require.Equal(t, 1, got[id], "run %s holds one CANCEL", id)
	}
}

func cancelByTeam(id, team string) api.BulkRequest {
	return api.BulkRequest{BulkID: id, Action: api.BulkCancel, Filter: api.BulkFilter{Labels: map[string]string{"team": team}}}
}

// TestBulkCancelREST: POST /v1/bulk starts a CANCEL job on the runs its
// label matches (202), GET follows it to DONE with its progress, and each
// matched run got one CANCEL, the others none; a repeat is answered 200
// with the job, another request under its bulkId 409 with nothing
// written.
func TestBulkCancelREST(t *testing.T) {
	t.Parallel()
	s := bulkStack(t)
	matched := s.labeledRuns(t, 5, map[string]string{"team": "a"})
	others := s.labeledRuns(t, 2, map[string]string{"team": "b"})

	a := s.post(t, "/v1/bulk", cancelByTeam("b1", "a"))
	require.Equal(t, http.StatusAccepted, a.status, "%s", a.body)
	job := decodeAs[api.BulkJob](t, a.body)
	require.Equal(t, "b1", job.BulkID)
	require.Equal(t, int64(5), job.Matched)
	require.Equal(t, "acme", job.TenantID)

	job = awaitBulk(t, func() api.BulkJob {
		g := s.getBulk(t, "b1")
		require.Equal(t, http.StatusOK, g.status, "%s", g.body)
		return decodeAs[api.BulkJob](t, g.body)
	})
	require.Equal(t, api.BulkDone, job.Status)
	require.Equal(t, [3]int64{5, 0, 0}, [3]int64{job.Done, job.Skipped, job.Failed})
	require.NotNil(t, job.EndedAt)
	s.requireCancelledOnce(t, matched, others)

	again := s.post(t, "/v1/bulk", cancelByTeam("b1", "a"))
	require.Equal(t, http.StatusOK, again.status, "a repeat: %s", again.body)
	require.Equal(t, job, decodeAs[api.BulkJob](t, again.body))

	before, jobs := s.counts(t), s.rows(t, "bulk_job_runs", "")
	other := s.post(t, "/v1/bulk", cancelByTeam("b1", "b"))
	require.Equal(t, http.StatusConflict, other.status, "%s", other.body)
	require.Equal(t, api.CodeIdempotencyConflict, other.errorBody(t).Code)
	require.Equal(t, before, s.counts(t), "a conflict writes nothing")
	require.Equal(t, jobs, s.rows(t, "bulk_job_runs", ""))
	s.requireCancelledOnce(t, matched, others)

	missing := s.getBulk(t, "nope")
	require.Equal(t, http.StatusNotFound, missing.status, "%s", missing.body)
	require.Equal(t, api.CodeNotFound, missing.errorBody(t).Code)
}

// TestBulkCancelRPC: bulk.start, bulk.get and bulk.cancel do over
// JSON-RPC what the REST routes do, in its shapes.
func TestBulkCancelRPC(t *testing.T) {
	t.Parallel()
	s := bulkStack(t)
	matched := s.labeledRuns(t, 3, map[string]string{"team": "a"})
	others := s.labeledRuns(t, 1, map[string]string{"team": "b"})
	call := func(method string, params any) rpcResponse {
		return s.rpcOne(t, `{"jsonrpc":"2.0","method":"`+method+`","params":`+string(mustJSON(t, params))+`,"id":1}`)
	}
	jobOf := func(r rpcResponse) api.BulkJob {
		require.Nil(t, r.Error, "%s", r.Result)
		return decodeAs[api.BulkJob](t, r.Result)
	}

	job := jobOf(call("bulk.start", cancelByTeam("r1", "a")))
	require.Equal(t, int64(3), job.Matched)
	job = awaitBulk(t, func() api.BulkJob { return jobOf(call("bulk.get", map[string]string{"bulkId": "r1"})) })
	require.Equal(t, api.BulkDone, job.Status)
	require.Equal(t, int64(3), job.Done)
	s.requireCancelledOnce(t, matched, others)
	require.Equal(t, job, jobOf(call("bulk.start", cancelByTeam("r1", "a"))), "a repeat answers the job")

	before := s.counts(t)
	r := call("bulk.start", cancelByTeam("r1", "b"))
	require.NotNil(t, r.Error)
	require.Equal(t, jsonrpc.CodeConflict, r.Error.Code)
	require.Equal(t, api.CodeIdempotencyConflict, r.Error.Data.Code)
	require.Equal(t, before, s.counts(t))

	r = call("bulk.get", map[string]string{"bulkId": "nope"})
	require.NotNil(t, r.Error)
	require.Equal(t, jsonrpc.CodeNotFound, r.Error.Code)
	r = call("bulk.cancel", map[string]string{"bulkId": "nope"})
	require.NotNil(t, r.Error)
	require.Equal(t, jsonrpc.CodeNotFound, r.Error.Code)
	require.Equal(t, api.BulkDone, jobOf(call("bulk.cancel", map[string]string{"bulkId": "r1"})).Status,
		"cancelling a job that has ended changes nothing")
}

// TestBulkCancelJob: a cancelled job is CANCELLED, stays so, and is not
// worked on to the end; a viewer may read it but not cancel it.
func TestBulkCancelJob(t *testing.T) {
	t.Parallel()
	first, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s := setup(t, gateway.Config{DisableScheduler: true, Bulk: gateway.BulkConfig{PollInterval: 10 * time.Millisecond, Batch: 2,
		BeforeRecord: func() { // the job is cancelled while its first batch is in flight
			once.Do(func() { close(first); <-proceed })
		}}})
	runs := s.labeledRuns(t, 10, map[string]string{"team": "a"})
	a := s.post(t, "/v1/bulk", cancelByTeam("c1", "a"))
	require.Equal(t, http.StatusAccepted, a.status, "%s", a.body)
	<-first

	denied, err := s.do(t, http.MethodPost, "/v1/bulk/c1/cancel", viewerToken, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, denied.status, "%s", denied.body)
	require.Equal(t, api.CodePermissionDenied, denied.errorBody(t).Code)

	c := s.post(t, "/v1/bulk/c1/cancel", nil)
	require.Equal(t, http.StatusOK, c.status, "%s", c.body)
	job := decodeAs[api.BulkJob](t, c.body)
	require.Equal(t, api.BulkCancelled, job.Status)
	require.NotNil(t, job.EndedAt)
	close(proceed)

	var got api.BulkJob
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		read, err := s.do(t, http.MethodGet, "/v1/bulk/c1", viewerToken, nil)
		require.NoError(c, err)
		require.Equal(c, http.StatusOK, read.status, "a viewer reads a job: %s", read.body)
		got = decodeAs[api.BulkJob](t, read.body)
		require.Equal(c, int64(2), got.Done, "the batch in flight is recorded")
	}, 30*time.Second, 10*time.Millisecond)
	require.Equal(t, api.BulkCancelled, got.Status)
	require.Equal(t, job.EndedAt, got.EndedAt)
	require.Len(t, s.cancels(t, runs), 2, "no run is acted on after the batch in flight")
}

// TestBulkBadInput: a bad request is refused on each transport in its
// shape, and nothing is written: no job, no run signalled.
func TestBulkBadInput(t *testing.T) {
	t.Parallel()
	s := bulkStack(t)
	s.labeledRuns(t, 1, map[string]string{"team": "a"})
	denied := outcome{http.StatusForbidden, api.CodePermissionDenied, http.StatusOK, jsonrpc.CodePermissionDenied, api.CodePermissionDenied}
	for _, tc := range []struct {
		name, body, token, msg string
		want                   outcome
	}{
		{"unknown action", `{"bulkId":"x","action":"DELETE","filter":{}}`, "", `unknown action "DELETE"`, invalidArgument},
		{"missing bulkId", `{"action":"CANCEL","filter":{}}`, "", "bulkId", invalidArgument},
		{"bad status", `{"bulkId":"x","action":"CANCEL","filter":{"status":["DONE"]}}`, "", `unknown status "DONE"`, invalidArgument},
		{"bad parent", `{"bulkId":"x","action":"CANCEL","filter":{"parent":"p"}}`, "", "must be a run id", invalidArgument},
		{"unknown field", `{"bulkId":"x","action":"CANCEL","filter":{"team":"a"}}`, "", "team", invalidArgument},
		{"viewer", `{"bulkId":"x","action":"CANCEL","filter":{}}`, viewerToken, "", denied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := tc.msg
			if msg == "" {
				msg = "viewer"
			}
			s.requireRefusedREST(t, exchange{path: "/v1/bulk", body: []byte(tc.body), token: tc.token}, tc.want, msg)
			s.requireRefusedRPC(t, exchange{path: "/rpc", body: rpcCall("bulk.start", tc.body), token: tc.token}, tc.want, msg, rpcID)
			require.Zero(t, s.rows(t, "bulk_jobs", ""), "a refusal records no job")
			require.Zero(t, s.rows(t, "bulk_job_runs", ""))
		})
	}
	r := s.rpcOne(t, `{"jsonrpc":"2.0","method":"bulk.get","params":{},"id":1}`)
	require.NotNil(t, r.Error)
	require.Equal(t, jsonrpc.CodeInvalidParams, r.Error.Code, "bulk.get without a bulkId")
	var e api.Error
	raw, err := json.Marshal(r.Error.Data)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &e))
	require.Equal(t, api.CodeInvalidArgument, e.Code)
}
