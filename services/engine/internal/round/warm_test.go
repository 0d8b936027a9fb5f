package round_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/engine/internal/decide"
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

// The state a warm run's round decides from is the one the Runner's last
// round of the run left, folded from that round's own decision
// (decide.State.ApplyDecided), not from its events read back: it is the
// fold of the log, as the next engine to load the run folds it, whatever
// the outputs hold (markup that JSON encoding escapes, insignificant
// spaces) and whatever the rounds' clocks read below the microsecond.
func TestWarmStateIsTheFoldOfTheLog(t *testing.T) {
	t.Parallel()
	b := newBench(t, 3)
	x := newRunner(b.db.Pool, round.Config{})
	b.start(x)
	outputs := []string{`{"html": "<a href=\"x\">&amp;</a>"}`, `[1, 2, {"a": null}]`, `"done"`}
	check := func(in decide.Input) {
		t.Helper()
		out := b.run(x, in)
		require.True(t, out.Checkpoint.Warm)
		fold, err := decide.Fold(out.Plan, b.events()[:out.State.Head])
		require.NoError(t, err)
		require.Equal(t, fold, out.State, "the state decided from is the fold of the log up to runSeq %d", out.State.Head)
	}
	for i, output := range outputs {
		check(decide.ResultCompleted{StepID: b.stepID(i), LogicalAttempt: 1, EngineAttemptID: "1",
			Output: json.RawMessage(output), Now: time.Now().UTC()})
	}
	check(completed(b.stepID(0))) // a stale result: it decides nothing, from the last state
	require.Equal(t, events.RunCompleted, b.events()[len(b.events())-1].EventType)
}
