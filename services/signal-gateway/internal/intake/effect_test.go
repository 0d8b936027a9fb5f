package intake_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/intaketest"
)

// waitLimit bounds a wait for a condition; tick is how often it is
// checked. Neither is a timing assertion.
const waitLimit, tick = 10 * time.Second, 5 * time.Millisecond

// runWaiting starts a run whose plan waits for each of names
// (intaketest.PlanWaitingFor) and returns its id.
func (b *bundle) runWaiting(t *testing.T, names ...string) string {
	t.Helper()
	req := startReq(events.NewRunID())
	req.Plan = intaketest.PlanWaitingFor(names...)
	res, err := b.in.RunStart(context.Background(), operator, req)
	require.NoError(t, err)
	return res.RunID
}

// send sends name with payload to runID as the operator, under a fresh id.
func (b *bundle) send(t *testing.T, runID, name, payload string) (intake.SignalResult, error) {
	t.Helper()
	sig := intake.Signal{RunID: runID, Name: name, ID: ptr(events.NewRunID())}
	if payload != "" {
		sig.Payload = json.RawMessage(payload)
	}
	return b.in.SignalSend(context.Background(), operator, sig)
}

// requireNothingWritten requires runID's log and the acceptance records
// to be as they were when before was taken.
func (b *bundle) requireNothingWritten(t *testing.T, runID string, before int) {
	t.Helper()
	require.Len(t, b.eventsOf(t, runID), before, "nothing appended")
	require.Zero(t, b.count(t, `SELECT count(*) FROM signal_acceptances WHERE run_id = $1`, runID), "nothing recorded")
}

// TestSignalUnknownName: a name that is neither a control signal nor one a
// waitSignal step of the run's plan waits for is refused with
// UnknownSignal, listing the names the run takes, and nothing is written.
func TestSignalUnknownName(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	runID := b.runWaiting(t, "approve", "reject", "approve")
	before := len(b.eventsOf(t, runID))
	for _, name := range []string{"aprove", "FROBNICATE", "Approve", "pause"} {
		_, err := b.send(t, runID, name, `{"by":"alice"}`)
		e := intaketest.RequireRefused(t, err, api.CodeUnknownSignal, "")
		require.Equal(t, []string{"PAUSE", "RESUME", "CANCEL", "RETRY_STEP", "approve", "reject"}, e.Details["accepts"],
			"control signals, then the plan's names without repeats")
		require.Equal(t, name, e.Details["signalName"])
		require.Contains(t, e.Message, `"`+name+`"`)
	}
	_, err := b.send(t, runID, "pause", "")
	require.ErrorContains(t, err, `case-sensitive: did you mean "PAUSE"?`)
	b.requireNothingWritten(t, runID, before)

	for _, name := range []string{"approve", "reject", "PAUSE", "CANCEL"} {
		_, err := b.send(t, runID, name, "")
		require.NoError(t, err, name)
	}
}

// TestSignalRetryStepPayload: RETRY_STEP needs {"stepId": …} naming a step
// of the run's plan, checked as the engine would; a step that is not
// FAILED is the engine's to decide, so it is accepted.
func TestSignalRetryStepPayload(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	runID := b.run(t)
	before := len(b.eventsOf(t, runID))
	for _, payload := range []string{"", `null`, `{}`, `{"stepId":""}`, `{"stepId":5}`, `["a"]`, `"a"`} {
		_, err := b.send(t, runID, "RETRY_STEP", payload)
		e := intaketest.RequireRefused(t, err, api.CodeInvalidArgument, "payload")
		require.Contains(t, e.Message, `{"stepId": "<id>"}`, "payload %s", payload)
		// The shape is checked before the run is looked up.
		_, err = b.send(t, events.NewRunID(), "RETRY_STEP", payload)
		intaketest.RequireRefused(t, err, api.CodeInvalidArgument, "payload")
	}
	_, err := b.send(t, runID, "RETRY_STEP", `{"stepId":"zz"}`)
	e := intaketest.RequireRefused(t, err, api.CodeInvalidArgument, "payload")
	require.Equal(t, "zz", e.Details["stepId"])
	require.Contains(t, e.Message, `names step "zz", which the run's plan does not have`)
	b.requireNothingWritten(t, runID, before)

	_, err = b.send(t, runID, "RETRY_STEP", `{"stepId":"a"}`)
	require.NoError(t, err, "a RUNNING run's step a is not FAILED: the engine ignores it, with its reason")
}

// TestSignalToEndedRun: a run that has ended takes no more signals: 409
// RunTerminal naming its status, and nothing written; but RETRY_STEP on a
// FAILED run reopens it, and a repeat of a signal accepted before the end
// is answered as the duplicate it is (Tier-0 idempotency).
func TestSignalToEndedRun(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	for _, tc := range []struct {
		end    events.Type
		status string
	}{{events.RunCompleted, "COMPLETED"}, {events.RunFailed, "FAILED"}, {events.RunCancelled, "CANCELLED"}} {
		t.Run(tc.status, func(t *testing.T) {
			runID := b.run(t)
			first, err := b.signal(t, runID, "go", ptr("before-the-end"))
			require.NoError(t, err)
			intaketest.EndRun(t, b.db.Pool, runID, tc.end)
			n := len(b.eventsOf(t, runID))

			for _, name := range []string{"go", "PAUSE", "RESUME", "CANCEL"} {
				_, err := b.send(t, runID, name, "")
				e := intaketest.RequireRefused(t, err, api.CodeRunTerminal, "")
				require.Equal(t, tc.status, e.Details["status"])
				require.Contains(t, e.Message, "has ended "+tc.status)
			}
			again, err := b.signal(t, runID, "go", ptr("before-the-end"))
			require.NoError(t, err)
			require.True(t, again.Duplicate)
			require.Equal(t, first.AcceptedSignalResult, again.AcceptedSignalResult)

			_, err = b.send(t, runID, "RETRY_STEP", `{"stepId":"a"}`)
			if tc.end == events.RunFailed {
				require.NoError(t, err, "RETRY_STEP reopens a FAILED run")
				n++
			} else {
				intaketest.RequireRefused(t, err, api.CodeRunTerminal, "")
			}
			require.Len(t, b.eventsOf(t, runID), n)
		})
	}
}

// TestSignalRunEndsWhileSignalWaits: the end is read under the run's head
// lock, so a signal that waits for that lock behind the round that ends
// the run sees the end: it is refused, and nothing is written after the
// end.
func TestSignalRunEndsWhileSignalWaits(t *testing.T) {
	t.Parallel()
	b := setup(t, intake.Config{})
	runID := b.run(t)
	ctx := context.Background()
	tx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	intaketest.EndRunTx(t, tx, runID, events.RunCompleted) // holds the head lock

	answered := make(chan error, 1)
	go func() {
		_, err := b.send(t, runID, "go", "")
		answered <- err
	}()
	require.Eventually(t, func() bool { // the signal waits for the lock
		return b.count(t, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
			AND query LIKE '%run_heads%FOR UPDATE%'`) > 0
	}, waitLimit, tick)
	require.NoError(t, tx.Commit(ctx))

	intaketest.RequireRefused(t, <-answered, api.CodeRunTerminal, "")
	evs := b.eventsOf(t, runID)
	require.Equal(t, events.RunCompleted, evs[len(evs)-1].EventType, "nothing after the end")
}
