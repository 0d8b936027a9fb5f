package eventlog_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/weftest"
)

// EventsFetchTailsTx returns each run's first event (unless NoFirst) and
// its events after AfterSeq, the whole run for AfterSeq 0, and nothing for
// a run with no events; and the Postgres store reports every capability.
func TestEventsFetchTails(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	log := eventlog.New(db.Pool)
	appendN := func(n int) string {
		runID := events.NewRunID()
		for i := range n {
			ev, err := events.New(events.Spec{RunID: runID, Type: events.RunPaused, LogicalAttemptID: string(rune('a' + i)), PlanVersion: "1"})
			require.NoError(t, err)
			_, err = eventlogtest.AppendLog(t.Context(), log, db.Pool, nil, ev)
			require.NoError(t, err)
		}
		return runID
	}
	a, b, c, none := appendN(5), appendN(2), appendN(3), events.NewRunID()
	got, err := log.EventsFetchTailsTx(t.Context(), db.Pool, []eventlog.RunTail{
		{RunID: a, AfterSeq: 3}, {RunID: b}, {RunID: c, AfterSeq: 1, NoFirst: true}, {RunID: none, AfterSeq: 9}})
	require.NoError(t, err)
	seqs := func(evs []events.Event) []int64 {
		var out []int64
		for _, e := range evs {
			out = append(out, e.RunSeq)
		}
		return out
	}
	require.Equal(t, []int64{1, 4, 5}, seqs(got[a]))
	require.Equal(t, []int64{1, 2}, seqs(got[b]))
	require.Equal(t, []int64{2, 3}, seqs(got[c]))
	require.NotContains(t, got, none)
	_, err = log.EventsFetchTailsTx(t.Context(), db.Pool, []eventlog.RunTail{{RunID: "not-a-uuid"}})
	require.ErrorIs(t, err, eventlog.ErrInvalidRunID)

	require.Equal(t, eventlog.Capabilities{ConditionalBatch: true, AtomicBatch: true, ReadAfterWrite: true, ScanConsistency: true},
		log.Capabilities())
}
