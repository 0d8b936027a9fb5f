package client_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

func bulkJob(id, status string) api.BulkJob {
	return api.BulkJob{BulkRequest: api.BulkRequest{BulkID: id, Action: api.BulkCancel,
		Filter: api.BulkFilter{Status: []string{"RUNNING"}, Labels: map[string]string{"team": "a"}}},
		TenantID: "acme", Status: status, Matched: 3, Done: 1, SkippedReasons: map[string]int{}}
}

// StartBulk sends the request with a fresh UUIDv7 bulkId, and says
// created for a 202.
func TestStartBulkCreated(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{jsonAnswer(t, http.StatusAccepted, bulkJob("echoed", api.BulkRunning))})

	job, created, err := b.client.StartBulk(context.Background(), api.BulkRequest{Action: api.BulkCancel,
		Filter: api.BulkFilter{Status: []string{"RUNNING"}, Labels: map[string]string{"team": "a"}}})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, bulkJob("echoed", api.BulkRunning), *job)

	reqs := b.gw.requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	require.Equal(t, http.MethodPost, r.method)
	require.Equal(t, "/v1/bulk", r.escapedPath)
	require.Equal(t, "CANCEL", r.body["action"])
	require.Equal(t, map[string]any{"status": []any{"RUNNING"}, "labels": map[string]any{"team": "a"}}, r.body["filter"])
	requireUUIDv7(t, r.body["bulkId"])
}

// A 200 is a repeat: the job, not created; the caller's bulkId is kept,
// and a retry after a failure sends the same one.
func TestStartBulkRepeatKeepsCallerID(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{
		errAnswer(t, http.StatusServiceUnavailable, api.CodeUnavailable, "database unavailable", nil),
		jsonAnswer(t, http.StatusOK, bulkJob("mine", api.BulkDone)),
	})

	job, created, err := b.client.StartBulk(context.Background(), api.BulkRequest{BulkID: "mine", Action: api.BulkCancel})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, api.BulkDone, job.Status)
	reqs := b.gw.requests()
	require.Len(t, reqs, 2)
	for _, r := range reqs {
		require.Equal(t, "mine", r.body["bulkId"])
	}
}

// A conflict is not retried and is returned as *Error.
func TestStartBulkConflict(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{errAnswer(t, http.StatusConflict, api.CodeIdempotencyConflict, "bulk job \"mine\" was started before",
		map[string]any{"bulkId": "mine"})})

	job, created, err := b.client.StartBulk(context.Background(), api.BulkRequest{BulkID: "mine", Action: api.BulkPause})
	require.Nil(t, job)
	require.False(t, created)
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, api.CodeIdempotencyConflict, e.Code)
	require.Len(t, b.gw.requests(), 1)
}

func TestGetAndCancelBulk(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{jsonAnswer(t, http.StatusOK, bulkJob("b/1", api.BulkCancelled))})

	job, err := b.client.GetBulk(context.Background(), "b/1")
	require.NoError(t, err)
	require.Equal(t, bulkJob("b/1", api.BulkCancelled), *job)
	job, err = b.client.CancelBulk(context.Background(), "b/1")
	require.NoError(t, err)
	require.Equal(t, api.BulkCancelled, job.Status)

	reqs := b.gw.requests()
	require.Len(t, reqs, 2)
	require.Equal(t, http.MethodGet, reqs[0].method)
	require.Equal(t, "/v1/bulk/b%2F1", reqs[0].escapedPath)
	require.Equal(t, http.MethodPost, reqs[1].method)
	require.Equal(t, "/v1/bulk/b%2F1/cancel", reqs[1].escapedPath)
	require.Nil(t, reqs[1].body, "cancel sends no body")

	for _, id := range []string{"", ".", ".."} {
		_, err := b.client.GetBulk(context.Background(), id)
		require.ErrorIs(t, err, client.ErrInvalidRequest, "id %q", id)
		_, err = b.client.CancelBulk(context.Background(), id)
		require.ErrorIs(t, err, client.ErrInvalidRequest, "id %q", id)
	}
	require.Len(t, b.gw.requests(), 2, "a bad id is not sent")
}
