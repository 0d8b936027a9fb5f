package client_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/client"
)

func TestRerunCreated(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{jsonAnswer(t, http.StatusCreated, startResult("echoed", false))})

	res, err := b.client.Rerun(context.Background(), "run/0", api.RerunRequest{
		FromStepID: "b", Input: []byte(`{"v":2}`),
	})
	require.NoError(t, err)
	require.Equal(t, startResult("echoed", false), *res)
	require.False(t, res.Duplicate)

	reqs := b.gw.requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	require.Equal(t, http.MethodPost, r.method)
	require.Equal(t, "/v1/runs/run%2F0/rerun", r.escapedPath)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, "b", r.body["fromStepId"])
	require.Equal(t, map[string]any{"v": float64(2)}, r.body["input"])
	require.NotContains(t, r.body, "runId", "the path names the run")
	requireUUIDv7(t, r.body["runRequestId"])
}

func TestRerunDuplicateKeepsCallerIDAndOmitsInput(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{jsonAnswer(t, http.StatusOK, startResult("mine-1", true))})

	res, err := b.client.Rerun(context.Background(), "run-0", api.RerunRequest{RunID: "run-0", FromStepID: "b", RunRequestID: "mine-1"})
	require.NoError(t, err)
	require.True(t, res.Duplicate)
	require.Equal(t, "run-1", res.RunID)

	reqs := b.gw.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "mine-1", reqs[0].body["runRequestId"])
	require.NotContains(t, reqs[0].body, "input", "no input: the source run's input is used")
	require.NotContains(t, reqs[0].body, "runId")
}

// A refusal is not retried: the same request would be refused again.
func TestRerunRefusedIsNotRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, []answer{errAnswer(t, http.StatusConflict, api.CodeRerunRefused, "run run-0 is RUNNING: a run is rerun once it has ended",
		map[string]any{"status": "RUNNING"})})

	res, err := b.client.Rerun(context.Background(), "run-0", api.RerunRequest{FromStepID: "b"})
	require.Nil(t, res)
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, http.StatusConflict, e.Status)
	require.Equal(t, api.CodeRerunRefused, e.Code)
	require.Contains(t, e.Message, "has ended")
	require.Len(t, b.gw.requests(), 1)
}

func TestRerunRefusesBadRequestLocally(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		runID string
		req   api.RerunRequest
	}{
		"empty runID":   {runID: "", req: api.RerunRequest{FromStepID: "b"}},
		"dot runID":     {runID: ".", req: api.RerunRequest{FromStepID: "b"}},
		"dot-dot runID": {runID: "..", req: api.RerunRequest{FromStepID: "b"}},
		"other run id":  {runID: "run-1", req: api.RerunRequest{RunID: "run-2", FromStepID: "b"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, []answer{jsonAnswer(t, http.StatusCreated, startResult("x", false))})
			res, err := b.client.Rerun(context.Background(), tc.runID, tc.req)
			require.ErrorIs(t, err, client.ErrInvalidRequest)
			require.Nil(t, res)
			require.Empty(t, b.gw.requests())
		})
	}
}
