package round_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine/internal/decide"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// The round that cancels a run writes the run's cancel notice to the
// outbox in its own transaction, with the RunCancelled it follows (one
// xmin): an engine that dies after the commit leaves the notice for the
// relay, never a cancelled run whose workers are not told. The notice
// names each step in flight with its logical attempt.
func TestCancelNoticeCommitsWithRunCancelled(t *testing.T) {
	t.Parallel()
	b := newBench(t, 2)
	x := newRunner(b.db.Pool, round.Config{})
	b.start(x)
	b.run(x, started(b.stepID(0)))
	out := b.run(x, decide.SignalAccepted{SignalID: "sig-1", Name: "CANCEL", Now: time.Now().UTC()})
	require.Len(t, out.Decision.Cancels, 1)

	ctx := t.Context()
	var eventXmin string
	require.NoError(t, b.db.Pool.QueryRow(ctx,
		`SELECT xmin::text FROM run_events WHERE run_id = $1 AND event_type = $2`,
		b.runID, string(events.RunCancelled)).Scan(&eventXmin))
	var (
		noticeXmin, subject, dedupe string
		payload                     []byte
	)
	require.NoError(t, b.db.Pool.QueryRow(ctx,
		`SELECT xmin::text, subject, dedupe_id, payload FROM outbox WHERE subject LIKE 'weft.cancel.%'`).
		Scan(&noticeXmin, &subject, &dedupe, &payload))
	require.Equal(t, eventXmin, noticeXmin, "the notice commits in the RunCancelled's transaction")
	require.Equal(t, "weft.cancel."+b.runID, subject)
	require.Equal(t, b.runID+"/cancel", dedupe, "a deterministic id: a relay's republish is deduplicated")
	var n task.Cancel
	require.NoError(t, json.Unmarshal(payload, &n))
	require.Equal(t, b.runID, n.RunID)
	require.Equal(t, []string{b.stepID(0)}, n.StepIDs, "only the step in flight; the second was never dispatched")
	require.Equal(t, map[string]string{b.stepID(0): "1"}, n.Attempts)
	require.Contains(t, n.Reason, "cancelled by signal")
	require.True(t, n.Covers(b.stepID(0), "1"))
	require.False(t, n.Covers(b.stepID(0), "2"), "a later attempt of the step is not cancelled")

	// A redelivered CANCEL decides nothing and writes no second notice.
	b.run(x, decide.SignalAccepted{SignalID: "sig-1", Name: "CANCEL", Now: time.Now().UTC()})
	var notices int
	require.NoError(t, b.db.Pool.QueryRow(ctx,
		`SELECT count(*) FROM outbox WHERE subject LIKE 'weft.cancel.%'`).Scan(&notices))
	require.Equal(t, 1, notices)
}

// A run cancelled with nothing in flight gets no notice: no worker holds
// anything of it.
func TestCancelWithNothingInFlightSendsNoNotice(t *testing.T) {
	t.Parallel()
	b := newBench(t, 1)
	x := newRunner(b.db.Pool, round.Config{})
	out := b.run(x, decide.SignalAccepted{SignalID: "sig-1", Name: "CANCEL", Now: time.Now().UTC()})
	require.Equal(t, events.RunCancelled, out.Decision.Events[0].Type, "the run is cancelled")
	require.Empty(t, out.Decision.Cancels)
	var notices int
	require.NoError(t, b.db.Pool.QueryRow(t.Context(),
		`SELECT count(*) FROM outbox WHERE subject LIKE 'weft.cancel.%'`).Scan(&notices))
	require.Zero(t, notices)
}
