package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/cli"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
)

// futureEvent is an event type no build of today knows, as a newer build
// would append it: with fields no reader of today knows either.
const futureEvent events.Type = "StepAnnotated"

// TestNewWriterOldReader plays a newer build's additive records into a
// running stack (tier0 contract, rolling-upgrade matrix, "new writer, old
// reader"): a table and columns this build does not know, and, in the log
// of a live run and on the bus, an event type with fields it does not
// know. The run still completes, the projector follows its log to the
// head without a gap, and the read API returns the unknown event as it was
// written.
func TestNewWriterOldReader(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t)
	ctx := t.Context()
	for _, ddl := range []string{
		`CREATE TABLE weft_future_records (run_id uuid PRIMARY KEY, body jsonb NOT NULL)`,
		`ALTER TABLE run_events ADD COLUMN future_note text`,
		`ALTER TABLE run_snapshots ADD COLUMN future_note text`,
		`ALTER TABLE engine_runs ADD COLUMN future_note text`,
		`ALTER TABLE outbox ADD COLUMN future_note text`,
	} {
		_, err := s.db.Pool.Exec(ctx, ddl)
		require.NoError(t, err, ddl)
	}

	r := s.weft(t, "run", "start", "-f", example("approval.yaml"), "-o", "json")
	require.NoError(t, r.err, r.errOut)
	runID := decode[api.StartRunResult](t, r).RunID
	s.waitFor(t, runID, "the gate waits", func(v *api.RunView) bool {
		return stepStatus(v, "gate") == events.StepStatusRunning
	})

	ev, err := events.New(events.Spec{
		RunID: runID, StepID: "gate", LogicalAttemptID: "1", Type: futureEvent, PlanVersion: "1",
		Data: map[string]any{"note": "from a newer build", "futureField": map[string]int{"n": 1}},
	})
	require.NoError(t, err)
	_, err = eventlogtest.Append(ctx, journal.New(eventlog.New(s.db.Pool)), s.db.Pool, nil, ev)
	require.NoError(t, err)
	_, err = s.db.Pool.Exec(ctx, `INSERT INTO weft_future_records VALUES ($1, '{"v": 2}')`, runID)
	require.NoError(t, err)

	require.NoError(t, s.weft(t, "signal", runID, "approve").err)
	r = s.weft(t, "run", "watch", runID, "-o", "json")
	require.Equal(t, cli.ExitOK, r.code, "err: %v", r.err)
	v := decode[api.RunView](t, r)
	require.Equal(t, events.RunStatusCompleted, v.Status)
	require.False(t, v.Stale)
	head, err := eventlog.New(s.db.Pool).RunHead(ctx, runID)
	require.NoError(t, err)
	require.Equal(t, head, v.LastEventSeq, "the snapshot reached the log's head, past the unknown event")

	page, err := s.client.RunEvents(ctx, runID, 0, 0)
	require.NoError(t, err)
	var found bool
	for _, e := range page.Events {
		if e.EventType == futureEvent {
			found = true
			var data map[string]any
			require.NoError(t, json.Unmarshal(e.EventData, &data))
			require.Equal(t, map[string]any{"note": "from a newer build", "futureField": map[string]any{"n": float64(1)}}, data)
		}
	}
	require.True(t, found, "the read API returns the unknown event")
	require.Empty(t, alerts(t, s), "no gap and no lag alert")
}

// alerts returns the projector's active alerts.
func alerts(t *testing.T, s *cliStack) []map[string]any {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.env["WEFT_READ_URL"]+"/v1/alerts", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+cliTestToken)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { require.NoError(t, res.Body.Close()) }()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var body struct {
		Alerts []map[string]any `json:"alerts"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	return body.Alerts
}
