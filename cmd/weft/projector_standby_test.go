package main

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/health"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
)

// `weft projector --read-database-url` serves the read API from the
// standby it names: a snapshot written on the primary is not listed while
// the standby's replay is paused, and is once it resumes. Its readiness
// checks the standby ("postgres read"), and its metrics have the replica
// lag gauge.
func TestProjectorReadDatabaseURL(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	primary, standby := weftest.NewStandbyDB(t)
	pool, read := primary.Pool, standby.Pool

	const token = "standby-reader-0123456789"
	addr := "127.0.0.1:" + strconv.Itoa(weftest.FreePort(t))
	ops := "http://127.0.0.1:" + strconv.Itoa(weftest.FreePort(t))
	var errOut weftest.Buffer
	stop := runInBackground(t, []string{"projector"}, &errOut, map[string]string{
		"WEFT_DATABASE_URL": primary.URL, "WEFT_PROJECTOR_READ_DATABASE_URL": standby.URL,
		"WEFT_NATS_URL": weftest.NewNATS(t).URL(), "WEFT_PROJECTOR_ADDR": addr,
		"WEFT_PROJECTOR_OPS_ADDR": ops[len("http://"):], "WEFT_API_KEYS": "reader acme viewer " + auth.HashKey(token),
	})
	require.Eventually(t, func() bool {
		r, status, ok := readiness(t, ops)
		return ok && status == http.StatusOK && containsCheck(r, "postgres read")
	}, time.Minute, 20*time.Millisecond, "ready, the standby checked; logs:\n%s", &errOut)
	status, body := get(t, ops+"/metrics")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "weft_projector_read_replica_lag_seconds")

	_, err := read.Exec(ctx, "SELECT pg_wal_replay_pause()")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var state string
		require.NoError(t, read.QueryRow(ctx, "SELECT pg_get_wal_replay_pause_state()").Scan(&state))
		return state == "paused"
	}, time.Minute, 10*time.Millisecond, "replay pauses")
	runID := events.NewRunID()
	_, err = pool.Exec(ctx, `INSERT INTO run_snapshots (run_id, tenant_id, status, last_event_seq, snapshot)
VALUES ($1, 'acme', 'APPROVED', 1, '{}')`, runID)
	require.NoError(t, err)
	list := "http://" + addr + "/v1/runs"
	require.NotContains(t, readAs(t, list, token), runID, "the paused standby has not the primary's row")

	_, err = read.Exec(ctx, "SELECT pg_wal_replay_resume()")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(readAs(t, list, token), runID) },
		time.Minute, 20*time.Millisecond, "listed once the standby replays it")
	require.NoError(t, stop())
}

// containsCheck reports whether the report has an ok check named name.
func containsCheck(r health.Report, name string) bool {
	for _, c := range r.Checks {
		if c.Name == name && c.Status == "ok" {
			return true
		}
	}
	return false
}

// readAs GETs url with token and returns the 200 answer's body.
func readAs(t *testing.T, url, token string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	return string(b)
}
