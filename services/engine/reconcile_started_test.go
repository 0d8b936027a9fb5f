package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/worker"
)

// Issue 16, defect 4, end to end beyond the dedupe window: a keyed
// attempt's worker charged and died once the engine had logged its
// StepStarted; by the time the task came back, the results stream no
// longer knew that StepStarted's Nats-Msg-Id (the stream was created
// again, as a window gone by leaves it), so the survivor's own StepStarted
// is no duplicate and the bus cannot tell. The engine's lookup answers
// "started" from the log; with no verifier the survivor fails the attempt
// as indeterminate and the activity does not run again.
func TestStartedAttemptBeyondTheDedupeWindowDoesNotRunAgain(t *testing.T) {
	t.Parallel()
	s := setup(t, reconcileConfig)
	l := newLedger()
	crash := s.crashingWorker(t, l, true)
	runID := s.start(t, parsePlan(t, payPlan(t, planKey+fastRetry(1))))
	crash()
	s.waitEvent(t, runID, events.StepStarted)
	require.NoError(t, s.js.DeleteStream(t.Context(), streams.ResultsStream))
	require.NoError(t, streams.Ensure(t.Context(), s.js, streams.Config{MaxBytes: 256 << 20}))

	startPayWorker(t, s.nats.JetStream(t), "survivor", func(_ context.Context, in worker.Input) (worker.Output, error) {
		return l.charge(in.IdempotencyKey), nil
	})
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunFailed, terminal(evs))
	require.Equal(t, worker.CodeReconciliationIndeterminate, stepError(t, runID, evs).Code)
	require.EqualValues(t, 1, l.asked.Load(), "the keyed activity ran once, before the crash")
	recs := s.records(t, runID)
	require.Len(t, recs, 1)
	require.Nil(t, recs[0].Result)
}
