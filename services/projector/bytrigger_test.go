package projector_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/services/projector"
)

// requested is a run of GET /v1/runs with its run request id.
type requested struct {
	RunID        string `json:"runId"`
	RunRequestID string `json:"runRequestId"`
}

// approveRequest approves a run of tenant ten whose run request id is
// requestID, as approve does, and returns its run id.
func (s *stack) approveRequest(t *testing.T, ten, requestID string) string {
	t.Helper()
	p, err := plan.ParseValidated([]byte(`{"planId":"orders","planVersion":"v1","steps":[{"id":"a","activity":"echo"}]}`), plan.Limits{})
	require.NoError(t, err)
	var runID string
	err = pgx.BeginFunc(t.Context(), s.db.Pool, func(tx pgx.Tx) error {
		runID, err = runstart.Approver{Journal: s.journal}.ApproveTx(t.Context(), tx, runstart.Request{Plan: p,
			TenantID: ten, ProjectID: "proj", EnvironmentID: "dev", RunRequestID: requestID})
		return err
	})
	require.NoError(t, err)
	return runID
}

// listRequested GETs /v1/runs?query with token and returns its runs.
func (s *stack) listRequested(t *testing.T, token, query string) []requested {
	t.Helper()
	var l struct {
		Runs []requested `json:"runs"`
	}
	s.fetch(t, token, "/v1/runs?limit=200&"+query).decode(t, &l)
	return l.Runs
}

// triggerMix approves the runs of trigger "orders" (three events, one
// whose id holds ':'), of a trigger whose id starts the same, of another
// tenant's trigger "orders", and a plain run, and waits until each is
// projected. It returns the runs of trigger orders, newest first.
func triggerMix(t *testing.T, s *stack) []requested {
	t.Helper()
	var orders []requested
	for _, ev := range []string{"e1", "e2", "evt:with:colons"} {
		req := "orders:" + ev
		orders = append([]requested{{RunID: s.approveRequest(t, tenant, req), RunRequestID: req}}, orders...)
	}
	others := []string{s.approveRequest(t, tenant, "orders-eu:e1"), s.approveRequest(t, tenant, "ordersx")}
	elsewhere := s.approveRequest(t, "other", "orders:e4")
	for _, r := range orders {
		s.waitRun(t, r.RunID, atSeq(1), "approved")
	}
	for _, id := range others {
		s.waitRun(t, id, atSeq(1), "approved")
	}
	require.Eventually(t, func() bool {
		runs := s.listRequested(t, otherToken, "")
		return len(runs) == 1 && runs[0].RunID == elsewhere
	}, waitFor, 10*time.Millisecond, "tenant other's run is projected")
	return orders
}

// GET /v1/runs?trigger=ID lists exactly the runs trigger ID started (run
// request id "ID:{eventId}") of the key's tenant, newest first, each with
// its run request id, in pages; other filters narrow it; an id that no
// trigger can have is a 400.
func TestRunsListByTrigger(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	orders := triggerMix(t, s)

	require.Equal(t, orders, s.listRequested(t, readerToken, "trigger=orders"))
	require.Empty(t, s.listRequested(t, readerToken, "trigger=order"))
	require.Len(t, s.listRequested(t, readerToken, "trigger=orders-eu"), 1)
	require.Len(t, s.listRequested(t, readerToken, ""), 5, "the list without trigger keeps every run")
	other := s.listRequested(t, otherToken, "trigger=orders")
	require.Len(t, other, 1, "tenant other's own run")
	require.Equal(t, "orders:e4", other[0].RunRequestID)

	ids := make([]string, len(orders))
	for i, r := range orders {
		ids[i] = r.RunID
	}
	require.Equal(t, ids, s.walk(t, "trigger=orders", 2), "pages of two")

	s.appendBus(t, lifecycle(t, orders[1].RunID)...)
	s.waitRun(t, orders[1].RunID, atSeq(6), "completes")
	require.Equal(t, orders[1:2], s.listRequested(t, readerToken, "trigger=orders&status=COMPLETED"))
	require.Empty(t, s.listRequested(t, readerToken, "trigger=orders&plan=billing"))

	for _, q := range []string{"trigger=", "trigger=orders:e1"} {
		requireError(t, s.fetch(t, readerToken, "/v1/runs?"+q), http.StatusBadRequest, api.CodeInvalidArgument, "trigger")
	}
	requireError(t, s.fetch(t, readerToken, "/v1/runs?trigger=orders&tenant=other"), http.StatusForbidden,
		api.CodePermissionDenied)
	requireError(t, s.fetch(t, "", "/v1/runs?trigger=orders"), http.StatusUnauthorized, api.CodeUnauthenticated)
}

// Rows a build older than migration 0012 projected have no run request
// id: the trigger filter cannot find them until Rebuild (`weft projector
// rebuild`) records it from each run's RunApproved.
func TestRebuildRecordsRunRequestIDs(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})
	orders := triggerMix(t, s)
	_, err := s.db.Pool.Exec(t.Context(), `UPDATE run_snapshots SET run_request_id = NULL`)
	require.NoError(t, err)
	require.Empty(t, s.listRequested(t, readerToken, "trigger=orders"))

	r, err := projector.NewRebuilder(s.db.Pool, projector.Config{})
	require.NoError(t, err)
	st, err := r.Rebuild(t.Context())
	require.NoError(t, err)
	require.Zero(t, st.Rebuilt, "every run has its snapshot")
	require.Equal(t, orders, s.listRequested(t, readerToken, "trigger=orders"))
	var unrecorded int
	require.NoError(t, s.db.Pool.QueryRow(t.Context(),
		`SELECT count(*) FROM run_snapshots WHERE run_request_id IS NULL`).Scan(&unrecorded))
	require.Zero(t, unrecorded)
}
