package round_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/services/engine/internal/decide"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// gate holds two owners, each right after it loaded the run, until both
// have loaded: armed once per race, so their retries pass freely.
type gate struct {
	mu      sync.Mutex
	armed   [2]bool
	arrived sync.WaitGroup
}

func (g *gate) arm() {
	g.arrived.Add(2)
	g.armed = [2]bool{true, true}
}

// hook is owner i's round.Config.AfterLoad.
func (g *gate) hook(i int) func() {
	return func() {
		g.mu.Lock()
		armed := g.armed[i]
		g.armed[i] = false
		g.mu.Unlock()
		if armed {
			g.arrived.Done()
			g.arrived.Wait()
		}
	}
}

// once returns f as a function that runs f on its first call only.
func once(f func()) func() {
	var o sync.Once
	return func() { o.Do(f) }
}

// Two owners (two Runners on one database) receive every input of a run
// at the same moment and both load the same state before either writes:
// for every input exactly one commits its decision, the other gets a
// conflict, reloads, and finds nothing left to do; and every logical
// attempt is dispatched once (one task in the outbox).
func TestOwnersRaceNeverBothCommit(t *testing.T) {
	t.Parallel()
	for _, cas := range []bool{true, false} {
		t.Run(fmt.Sprintf("cas=%t", cas), func(t *testing.T) {
			t.Parallel()
			b := newBench(t, 8)
			g := &gate{}
			var owners [2]*round.Runner
			for i := range owners {
				owners[i] = newRunner(b.db.Pool, round.Config{CASRequired: cas, CheckpointSteps: 3, AfterLoad: g.hook(i)})
			}
			race(t, b, g, owners, decide.RunApproved{Now: time.Now().UTC()})
			for i := range b.steps {
				race(t, b, g, owners, started(b.stepID(i)))
				race(t, b, g, owners, completed(b.stepID(i)))
			}
			counts := b.taskCounts()
			require.Len(t, counts, b.steps, "one task per step")
			for id, n := range counts {
				require.Equal(t, 1, n, "task %s dispatched once", id)
			}
			b.requireFaithful()
		})
	}
}

// race runs in on both owners at once and asserts that exactly one
// committed a decision.
func race(t *testing.T, b *bench, g *gate, owners [2]*round.Runner, in decide.Input) {
	t.Helper()
	g.arm()
	var outs [2]round.Outcome
	var errs [2]error
	var wg sync.WaitGroup
	for i := range owners {
		wg.Go(func() { outs[i], errs[i] = owners[i].Run(b.t.Context(), round.Round{RunID: b.runID, Input: in}) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs[:]...))
	won := 0
	for _, out := range outs {
		if out.Appended > 0 {
			won++
			continue
		}
		require.True(t, out.Decision.Empty(), "%T: the loser decides nothing after reloading", in)
		require.Positive(t, out.Conflicts, "%T: the loser met a conflict", in)
	}
	require.Equal(t, 1, won, "%T: exactly one owner commits", in)
}

// bumpCheckpoint plays another owner that rewrote the run's checkpoint
// at the same head (say, one with other rotation thresholds): holding the
// head lock, as every checkpoint writer does, it moves the checkpoint
// version on.
func bumpCheckpoint(ctx context.Context, t *testing.T, b *bench) {
	err := pgx.BeginFunc(ctx, b.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM run_heads WHERE run_id = $1 FOR UPDATE`, b.runID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE run_checkpoints SET checkpoint_version = checkpoint_version + 1 WHERE run_id = $1`, b.runID)
		return err
	})
	if err != nil {
		t.Error(err)
	}
}

// Under cas-required the checkpoint version is part of the commit
// precondition: a round whose run's checkpoint was rewritten after it
// loaded, though the head did not move, conflicts, reloads and commits
// on the new version. Single-owner mode does not compare it.
func TestCASRequiredComparesCheckpointVersion(t *testing.T) {
	t.Parallel()
	for _, cas := range []bool{true, false} {
		t.Run(fmt.Sprintf("cas=%t", cas), func(t *testing.T) {
			t.Parallel()
			b := newBench(t, 4)
			setupRunner := newRunner(b.db.Pool, round.Config{CheckpointSteps: 2})
			b.start(setupRunner)
			b.complete(setupRunner, 0)
			b.complete(setupRunner, 1)
			row, ok := b.checkpoint()
			require.True(t, ok)
			require.Equal(t, int64(1), row.Version)

			x := newRunner(b.db.Pool, round.Config{CASRequired: cas,
				AfterLoad: once(func() { bumpCheckpoint(t.Context(), t, b) })})
			out := b.run(x, started(b.stepID(2)))
			require.Equal(t, []string{"StepStarted"}, specTypes(out.Decision.Events))
			require.Equal(t, int64(1), int64(out.Appended))
			if cas {
				require.Equal(t, 1, out.Conflicts, "the moved checkpoint version is a conflict")
				require.Equal(t, int64(2), out.Checkpoint.Version, "decided again on the new version")
			} else {
				require.Zero(t, out.Conflicts, "single-owner does not compare the checkpoint version")
				require.Equal(t, int64(1), out.Checkpoint.Version)
			}
		})
	}
}

// Under cas-required a round that writes no events (a Resync that sends a
// lost-looking task again) still commits only if the run's head did not
// move: here another owner completed the attempt after the round loaded,
// so the round conflicts, reloads, and resends nothing. Single-owner mode
// commits the stale resend.
func TestCASRequiredGuardsRoundsWithoutEvents(t *testing.T) {
	t.Parallel()
	for _, cas := range []bool{true, false} {
		t.Run(fmt.Sprintf("cas=%t", cas), func(t *testing.T) {
			t.Parallel()
			b := newBench(t, 3)
			t0 := time.Now().UTC()
			other := newRunner(b.db.Pool, round.Config{})
			b.run(other, decide.RunApproved{Now: t0})
			finish := func() {
				for _, in := range []decide.Input{started(b.stepID(0)), completed(b.stepID(0))} {
					in = withNow(in, t0.Add(5*time.Minute+30*time.Second))
					if _, err := other.Run(t.Context(), round.Round{RunID: b.runID, Input: in}); err != nil {
						t.Error(err)
					}
				}
			}
			x := newRunner(b.db.Pool, round.Config{CASRequired: cas, AfterLoad: once(finish)})
			// s000 was scheduled at t0 and never started: at t0+6m, past
			// its 5m timeout, it looks lost.
			out := b.run(x, decide.Resync{TaskGrace: time.Minute, Now: t0.Add(6 * time.Minute)})
			resends := 0
			for id := range b.taskCounts() {
				if strings.Contains(id, "/resend-") {
					resends++
				}
			}
			if cas {
				require.Equal(t, 1, out.Conflicts)
				require.True(t, out.Decision.Empty(), "after reloading, s000 has completed: nothing to resend")
				require.Zero(t, resends)
			} else {
				require.Zero(t, out.Conflicts)
				require.Len(t, out.Decision.Tasks, 1)
				require.Equal(t, 1, resends, "single-owner commits the resend decided on the stale state")
			}
		})
	}
}

// withNow sets the Now of a ResultStarted or ResultCompleted.
func withNow(in decide.Input, now time.Time) decide.Input {
	switch v := in.(type) {
	case decide.ResultStarted:
		v.Now = now
		return v
	case decide.ResultCompleted:
		v.Now = now
		return v
	}
	return in
}

// A CheckpointConflictError is a conflict: errors.Is(err,
// eventlog.ErrConflict), which makes a round reload and decide again.
func TestCheckpointConflictIsAConflict(t *testing.T) {
	t.Parallel()
	var err error = &round.CheckpointConflictError{RunID: "r", ExpectedHead: 3, Head: 4, ExpectedVersion: 1, Version: 1}
	require.ErrorIs(t, fmt.Errorf("wrapped: %w", err), eventlog.ErrConflict)
	require.Contains(t, err.Error(), "head 4 (expected 3)")
}
