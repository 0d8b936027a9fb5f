package round_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// A warm run's rounds use the Runner's own state of it, and still see what
// another writer appended since: no conflict, the same decisions as a cold
// load, the same log.
func TestWarmRunSeesWhatOthersAppended(t *testing.T) {
	t.Parallel()
	b := newBench(t, 4)
	x := newRunner(b.db.Pool, round.Config{})
	require.False(t, b.start(x).Checkpoint.Warm, "the first round loads the run")
	out := b.complete(x, 0)
	require.True(t, out.Checkpoint.Warm, "later rounds use the state the last one committed")

	other := newRunner(b.db.Pool, round.Config{})
	require.Equal(t, []string{"StepStarted"}, specTypes(b.run(other, started(b.stepID(1))).Decision.Events))

	out = b.run(x, completed(b.stepID(1)))
	require.True(t, out.Checkpoint.Warm)
	require.Zero(t, out.Conflicts, "the warm state is brought up to date before deciding")
	require.Equal(t, []string{"StepCompleted", "StepScheduled"}, specTypes(out.Decision.Events))
	for i := 2; i < b.steps; i++ {
		b.complete(x, i)
	}
	evs := b.events()
	require.Equal(t, events.RunCompleted, evs[len(evs)-1].EventType)
	completions := 0
	for i, e := range evs {
		require.Equal(t, int64(i+1), e.RunSeq)
		if e.EventType == events.StepCompleted {
			completions++
		}
	}
	require.Equal(t, b.steps, completions, "one completion per step")
}

// A warm state is only a cache: once its run is gone from the log, the
// round's append fails on the run's head, the state is dropped, and the
// round reloads the run, which is unknown.
func TestWarmRunOfADeletedRunIsDropped(t *testing.T) {
	t.Parallel()
	b := newBench(t, 3)
	x := newRunner(b.db.Pool, round.Config{})
	b.start(x)
	b.complete(x, 0)
	require.NoError(t, b.log.RunDelete(t.Context(), b.runID))

	_, err := x.Run(t.Context(), round.Round{RunID: b.runID, Input: started(b.stepID(1))})
	require.ErrorIs(t, err, round.ErrUnknownRun)
	require.Empty(t, b.events())
}
