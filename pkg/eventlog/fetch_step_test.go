package eventlog_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
)

// EventsFetchStep returns the step's own events and the run's RunApproved
// and RunCancelled, in runSeq order, but neither another step's events
// (a forEach child's neither) nor other run-level events; it honours
// limit, reads nothing of another run, and refuses a run id that is not a
// UUID.
func TestEventsFetchStep(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	log := eventlog.New(db.Pool)
	runID, other := events.NewRunID(), events.NewRunID()
	appendEv := func(runID, stepID, attempt string, typ events.Type) {
		t.Helper()
		ev, err := events.New(events.Spec{RunID: runID, StepID: stepID, LogicalAttemptID: attempt, Type: typ, PlanVersion: "1"})
		require.NoError(t, err)
		_, err = eventlogtest.AppendLog(t.Context(), log, db.Pool, nil, ev)
		require.NoError(t, err)
	}
	appendEv(runID, "", "", events.RunQueued)                                 // 1
	appendEv(runID, "", "", events.RunApproved)                               // 2
	appendEv(runID, "each", "1", events.StepScheduled)                        // 3
	appendEv(runID, events.ChildStepID("each", 0), "1", events.StepScheduled) // 4
	appendEv(runID, "other", "1", events.StepScheduled)                       // 5
	appendEv(runID, "each", "1", events.StepStarted)                          // 6
	appendEv(runID, "", "", events.RunCancelled)                              // 7
	appendEv(other, "each", "1", events.StepScheduled)

	type row struct {
		Seq  int64
		Step string
		Type events.Type
	}
	rows := func(evs []events.Event) []row {
		out := []row{}
		for _, e := range evs {
			require.Equal(t, runID, e.RunID)
			out = append(out, row{e.RunSeq, e.StepID, e.EventType})
		}
		return out
	}
	got, err := log.EventsFetchStep(t.Context(), runID, "each", 0)
	require.NoError(t, err)
	require.Equal(t, []row{{2, "", events.RunApproved}, {3, "each", events.StepScheduled},
		{6, "each", events.StepStarted}, {7, "", events.RunCancelled}}, rows(got))

	got, err = log.EventsFetchStepTx(t.Context(), db.Pool, runID, events.ChildStepID("each", 0), 2)
	require.NoError(t, err)
	require.Equal(t, []row{{2, "", events.RunApproved}, {4, events.ChildStepID("each", 0), events.StepScheduled}}, rows(got))

	got, err = log.EventsFetchStep(t.Context(), events.NewRunID(), "each", 0)
	require.NoError(t, err)
	require.Empty(t, got, "an unknown run has no events")

	_, err = log.EventsFetchStep(t.Context(), "not-a-uuid", "each", 0)
	require.ErrorIs(t, err, eventlog.ErrInvalidRunID)
}
