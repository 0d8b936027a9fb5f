package round_test

import (
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/engine/internal/decide"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// startedEach reports, for each result, whether its round started its run.
func startedEach(results []round.Result) []bool {
	out := make([]bool, len(results))
	for i, r := range results {
		out[i] = slices.ContainsFunc(r.Decision.Events, func(e events.Spec) bool { return e.Type == events.RunStarted })
	}
	return out
}

// Two places of a key free in one transaction: its wake offers both
// waiters, in queue order, and one batch starts both (the second's count
// had the first ahead of it, and the first left the queue in the batch).
// A batch of four starts takes the two places and queues the others.
func TestKeyQueueFillsEveryPlaceThatFrees(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := weftest.NewDB(t)
	approver := runstart.Approver{Journal: journal.New(eventlog.New(db.Pool))}
	p, err := plan.Parse([]byte(`{"planId":"k","planVersion":"1","concurrency":[{"key":"'all'","limit":2}],
		"steps":[{"id":"g","kind":"waitSignal","signal":"go"}]}`), plan.Limits{})
	require.NoError(t, err)
	v, err := p.Validated(plan.Limits{})
	require.NoError(t, err)
	var runs []string
	for range 4 {
		id, err := approver.Approve(ctx, db.Pool, runstart.Request{Plan: v})
		require.NoError(t, err)
		runs = append(runs, id)
	}
	x := newRunner(db.Pool, round.Config{})
	now := time.Now().UTC()
	batch := func(in func(string) decide.Input, ids ...string) []round.Result {
		rounds := make([]round.Round, len(ids))
		for i, id := range ids {
			rounds[i] = round.Round{RunID: id, Input: in(id)}
		}
		results, err := x.RunBatch(ctx, rounds)
		require.NoError(t, err)
		for _, r := range results {
			require.NoError(t, r.Err)
		}
		return results
	}
	approved := func(string) decide.Input { return decide.RunApproved{Now: now} }
	require.Equal(t, []bool{true, true, false, false}, startedEach(batch(approved, runs...)))

	cancel := func(id string) decide.Input {
		return decide.SignalAccepted{SignalID: "c-" + id, Name: plan.SignalCancel, Now: now}
	}
	batch(cancel, runs[0], runs[1])
	wakes, err := admission.Wakes(ctx, db.Pool, 10)
	require.NoError(t, err)
	require.Len(t, wakes, 1, "one wake for the key's slot")
	var offers []admission.Offer
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		offers, err = admission.OffersTx(ctx, tx, wakes, 100)
		return err
	}))
	require.Len(t, offers, 1)
	require.Equal(t, runs[2:], offers[0].RunIDs, "both waiters, oldest first")
	require.Equal(t, []bool{true, true}, startedEach(batch(approved, offers[0].RunIDs...)))
	require.NoError(t, admission.DoneWakes(ctx, db.Pool, wakes))
	wakes, err = admission.Wakes(ctx, db.Pool, 10)
	require.NoError(t, err)
	require.Empty(t, wakes)
}
