package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// rerunRefused: a rerun the source run's state refuses, a conflict.
var rerunRefused = outcome{http.StatusConflict, api.CodeRerunRefused,
	http.StatusOK, jsonrpc.CodeConflict, api.CodeRerunRefused}

// rerunParams is run.rerun's params for a rerun of runID with the REST
// body's members.
func rerunParams(runID, body string) string {
	return `{"runId":` + jsonString(runID) + `,` + body[1:]
}

// TestRPCRerun: run.rerun of an ended run starts a new run of its plan
// version linked to its source (rerunOf), answered with the start's
// result; a repeat of its runRequestId answers the same run as a
// duplicate and starts nothing.
func TestRPCRerun(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	src := s.run(t)
	intaketest.EndRun(t, s.db.Pool, src, events.RunCompleted)

	call := fmt.Sprintf(`{"jsonrpc":"2.0","method":"run.rerun","params":{"runId":%q,"fromStepId":"a","input":{"n":2},"runRequestId":"rr-1"},"id":"r1"}`, src)
	r := s.rpcOne(t, call)
	require.Nil(t, r.Error, "%s", r.Result)
	require.JSONEq(t, `"r1"`, string(r.ID))
	var res api.StartRunResult
	require.NoError(t, json.Unmarshal(r.Result, &res))
	require.False(t, res.Duplicate)
	require.Equal(t, "rr-1", res.RunRequestID)
	require.NotEqual(t, src, res.RunID)

	evs, err := eventlog.New(s.db.Pool).EventsFetchAfter(context.Background(), res.RunID, 0, 100)
	require.NoError(t, err)
	require.NotEmpty(t, evs)
	require.Equal(t, events.RunApproved, evs[0].EventType)
	var approved events.RunApprovedData
	require.NoError(t, evs[0].Data(&approved))
	require.NotNil(t, approved.RerunOf)
	require.Equal(t, src, approved.RerunOf.RunID)
	require.Equal(t, "a", approved.RerunOf.FromStepID)
	require.Empty(t, approved.RerunOf.Reuse, "a and its descendant w run anew: nothing is copied")
	require.JSONEq(t, `{"n":2}`, string(approved.Input))

	before := s.counts(t)
	again := s.rpcOne(t, call)
	require.Nil(t, again.Error)
	var dup api.StartRunResult
	require.NoError(t, json.Unmarshal(again.Result, &dup))
	require.True(t, dup.Duplicate)
	require.Equal(t, res.RunID, dup.RunID)
	require.Equal(t, before, s.counts(t), "a repeat starts nothing")
}

// TestRPCRerunRefusals: what cannot be rerun is refused over JSON-RPC in
// its error shape, with the Weft error as data, and over REST with the
// same code and message; nothing is written.
func TestRPCRerunRefusals(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{})
	running := s.run(t)
	ended := s.run(t)
	intaketest.EndRun(t, s.db.Pool, ended, events.RunCompleted)

	cases := []struct {
		name, runID, body string
		want              outcome
		msg               string
	}{
		{"a step to copy did not succeed", ended, `{"fromStepId":"w"}`, rerunRefused,
			`step "a" did not succeed in run ` + ended},
		{"the source has not ended", running, `{"fromStepId":"a"}`, rerunRefused, "a run is rerun once it has ended"},
		{"no such step", ended, `{"fromStepId":"nope"}`, invalidArgument, `plan has no step "nope"`},
		{"no fromStepId", ended, `{"input":{"n":1}}`, invalidArgument, "fromStepId is required"},
		{"no such run", events.NewRunID(), `{"fromStepId":"a"}`, notFound, "no run "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.requireRefusedRPC(t, exchange{path: "/rpc", body: rpcCall("run.rerun", rerunParams(tc.runID, tc.body))},
				tc.want, tc.msg, rpcID)
			s.requireRefusedREST(t, exchange{path: "/v1/runs/" + tc.runID + "/rerun", body: []byte(tc.body)}, tc.want, tc.msg)
		})
	}

	t.Run("details", func(t *testing.T) {
		r := s.rpcOne(t, string(rpcCall("run.rerun", rerunParams(ended, `{"fromStepId":"w"}`))))
		require.NotNil(t, r.Error)
		require.Equal(t, -32009, r.Error.Code)
		require.Equal(t, ended, r.Error.Data.Details["runId"])
		require.Equal(t, "a", r.Error.Data.Details["stepId"])
		require.Equal(t, "PENDING", r.Error.Data.Details["status"])
	})

	t.Run("a viewer may not rerun", func(t *testing.T) {
		before := s.counts(t)
		a, err := s.do(t, http.MethodPost, "/rpc", viewerToken, rpcCall("run.rerun", rerunParams(ended, `{"fromStepId":"a"}`)))
		require.NoError(t, err)
		var r rpcResponse
		require.NoError(t, json.Unmarshal(a.body, &r), "%s", a.body)
		require.NotNil(t, r.Error, "%s", a.body)
		require.Equal(t, jsonrpc.CodePermissionDenied, r.Error.Code, "%s", a.body)
		require.Equal(t, before, s.counts(t), "nothing is persisted")
	})

	t.Run("another tenant's run is not found", func(t *testing.T) {
		before := s.counts(t)
		a, err := s.do(t, http.MethodPost, "/rpc", strangerToken, rpcCall("run.rerun", rerunParams(ended, `{"fromStepId":"a"}`)))
		require.NoError(t, err)
		var r rpcResponse
		require.NoError(t, json.Unmarshal(a.body, &r), "%s", a.body)
		require.NotNil(t, r.Error, "%s", a.body)
		require.Equal(t, jsonrpc.CodeNotFound, r.Error.Code, "%s", a.body)
		require.Equal(t, before, s.counts(t), "nothing is persisted")
	})
}
