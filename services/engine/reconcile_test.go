package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// Activity result reconciliation end to end (docs/reconciliation.md): a
// real engine on Postgres, JetStream, and pkg/worker workers whose
// activity charges a ledger (the external system) keyed by the step's
// idempotency key.

const planKey = `,"idempotencyKey":"order-42"`

// Every row of the contract's outcome matrix, on a step the plan keys:
// what the run does, what the records say, and how often the side effect
// was asked for.
func TestReconcileOutcomes(t *testing.T) {
	t.Parallel()
	charge := func(l *ledger, in worker.Input) (worker.Output, error) { return l.charge(in.IdempotencyKey), nil }
	afterCharging := func(l *ledger, in worker.Input) (worker.Output, error) {
		l.charge(in.IdempotencyKey)
		return worker.Output{}, worker.FailedAfterSideEffect("GATEWAY_TIMEOUT", "the charge was sent; no answer")
	}
	firstThen := func(first, then func(*ledger, worker.Input) (worker.Output, error)) func(*ledger, worker.Input) (worker.Output, error) {
		return func(l *ledger, in worker.Input) (worker.Output, error) {
			if in.LogicalAttemptID == "1" {
				return first(l, in)
			}
			return then(l, in)
		}
	}
	busy := func(*ledger, worker.Input) (worker.Output, error) {
		return worker.Output{}, worker.Retryable("BUSY", "the ledger is busy")
	}
	tests := []struct {
		name     string
		fields   string // of the plan step, after its idempotency key
		modes    []verifyMode
		activity func(*ledger, worker.Input) (worker.Output, error)
		terminal events.Type
		code     string // the step's error code in the snapshot; "" for none
		records  []recordWant
		asked    int32    // charge requests
		verifies int32    // verify calls
		tokens   []uint64 // fencing tokens the activity saw, in order
	}{
		{name: "success", fields: fastRetry(1), activity: charge, terminal: events.RunCompleted,
			records: []recordWant{{status: task.StatusCompleted}}, asked: 1, tokens: []uint64{1}},
		{name: "failure before side effect", fields: fastRetry(3),
			activity: func(*ledger, worker.Input) (worker.Output, error) {
				return worker.Output{}, worker.NonRetryable("CARD_INVALID", "no such card")
			},
			terminal: events.RunFailed, code: "CARD_INVALID",
			records: []recordWant{{status: task.StatusFailed, code: "CARD_INVALID"}}, tokens: []uint64{1}},
		{name: "failure after side effect", fields: fastRetry(2), activity: firstThen(afterCharging, charge),
			terminal: events.RunCompleted, records: []recordWant{
				{status: task.StatusIndeterminate, code: "GATEWAY_TIMEOUT"},
				{status: task.StatusCompleted, by: task.ReconciledByVerify}},
			asked: 1, verifies: 1, tokens: []uint64{1}},
		{name: "timeout", fields: fastRetry(2) + `,"timeout":"200ms"`,
			activity: firstThen(func(l *ledger, in worker.Input) (worker.Output, error) {
				l.charge(in.IdempotencyKey)
				return worker.Output{}, errHang
			}, charge),
			terminal: events.RunCompleted, records: []recordWant{
				{status: task.StatusTimedOut, code: worker.CodeTimeout},
				{status: task.StatusCompleted, by: task.ReconciledByVerify}},
			asked: 1, verifies: 1, tokens: []uint64{1}},
		{name: "retryable failure", fields: fastRetry(2), activity: firstThen(busy, charge),
			terminal: events.RunCompleted, records: []recordWant{
				{status: task.StatusFailed, code: "BUSY"},
				{status: task.StatusCompleted}},
			asked: 1, verifies: 1, tokens: []uint64{1, 2}},
		{name: "retry exhaustion", fields: fastRetry(2), activity: busy, terminal: events.RunFailed, code: "BUSY",
			records:  []recordWant{{status: task.StatusFailed, code: "BUSY"}, {status: task.StatusFailed, code: "BUSY"}},
			verifies: 1, tokens: []uint64{1, 2}},
		{name: "verifier unavailable", fields: fastRetry(2), modes: []verifyMode{unreachable}, activity: afterCharging,
			terminal: events.RunFailed, code: worker.CodeReconciliationIndeterminate, records: []recordWant{
				{status: task.StatusIndeterminate, code: "GATEWAY_TIMEOUT"},
				{status: task.StatusIndeterminate, code: worker.CodeReconciliationIndeterminate}},
			asked: 1, verifies: 1, tokens: []uint64{1}},
		{name: "verifier contradiction", fields: fastRetry(3), modes: []verifyMode{broken}, activity: afterCharging,
			terminal: events.RunFailed, code: worker.CodeReconciliationContradiction, records: []recordWant{
				{status: task.StatusIndeterminate, code: "GATEWAY_TIMEOUT"},
				{status: task.StatusIndeterminate, code: worker.CodeReconciliationContradiction}},
			asked: 1, verifies: 1, tokens: []uint64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, reconcileConfig)
			l := newLedger(tt.modes...)
			var mu sync.Mutex
			var tokens []uint64
			startPayWorker(t, s.js, "w", func(ctx context.Context, in worker.Input) (worker.Output, error) {
				mu.Lock()
				tokens = append(tokens, in.FencingToken)
				mu.Unlock()
				out, err := tt.activity(l, in)
				if errors.Is(err, errHang) {
					<-ctx.Done()
					return worker.Output{}, ctx.Err()
				}
				return out, err
			}, worker.WithVerify(l.verify))
			runID := s.start(t, parsePlan(t, payPlan(t, planKey+tt.fields)))
			evs := s.waitTerminal(t, runID)
			require.Equal(t, tt.terminal, terminal(evs))
			if tt.code == "" {
				require.Nil(t, stepError(t, runID, evs))
			} else {
				require.Equal(t, tt.code, stepError(t, runID, evs).Code, "the snapshot shows the step's error")
			}
			recs := s.requireRecords(t, runID, "order-42", evs, tt.records...)
			requireSuccessIsReconciled(t, evs, recs)
			require.Equal(t, tt.asked, l.asked.Load(), "charge requests")
			require.Equal(t, tt.verifies, l.calls.Load(), "verify calls")
			mu.Lock()
			require.Equal(t, tt.tokens, tokens, "fencing tokens")
			mu.Unlock()
			if tt.code == worker.CodeReconciliationContradiction {
				require.NotEmpty(t, recs[1].Diagnostics["contradiction"], "the contradiction is recorded for the operator")
			}
		})
	}
}

// errHang asks the outcome test's activity to hang until its context ends.
var errHang = &worker.Error{Code: "HANG"}

// A run cancelled while a keyed attempt is in flight records the attempt
// cancelled, under the plan's key or the key the worker derived (which the
// engine learnt from its StepStarted), and never a success.
func TestReconcileCancellation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, fields, key string
		opts              []worker.ActivityOption
	}{
		{name: "plan key", fields: planKey, key: "order-42"},
		{name: "derived key", key: "order/7", opts: []worker.ActivityOption{
			worker.WithIdempotencyKey(func(in worker.Input) (string, error) { return "order/" + string(in.JSON), nil })}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, reconcileConfig)
			stopped := make(chan struct{})
			startPayWorker(t, s.js, "w", func(ctx context.Context, _ worker.Input) (worker.Output, error) {
				<-ctx.Done()
				close(stopped)
				return worker.Output{}, ctx.Err()
			}, c.opts...)
			runID := s.start(t, parsePlan(t, payPlan(t, c.fields+`,"input":7,"timeout":"1h"`)))
			s.waitEvent(t, runID, events.StepStarted)
			s.signal(t, runID, "CANCEL", "stop", `{}`)
			evs := s.waitTerminal(t, runID)
			require.Equal(t, events.RunCancelled, terminal(evs))
			<-stopped
			s.requireRecords(t, runID, c.key, evs, recordWant{status: task.StatusCancelled, code: "CANCELLED"})
		})
	}
}

// A worker runs the side effect (or not) and dies before it reports; a
// fresh worker takes the redelivery, finds no record, and verifies: one
// case per verify state. The side effect is never asked for twice, and
// the step succeeds only with the verifier's result or its own run.
func TestReconcileCrashAndResume(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		state       worker.VerifyState
		chargeFirst bool
		modes       []verifyMode
		terminal    events.Type
		code        string
		records     []recordWant
		verifies    int32
		by          string // how the success was reconciled
	}{
		{state: worker.VerifyNotCompleted, terminal: events.RunCompleted,
			records: []recordWant{{status: task.StatusCompleted}}, verifies: 1},
		{state: worker.VerifyCompletedWithResult, chargeFirst: true, terminal: events.RunCompleted,
			records: []recordWant{{status: task.StatusCompleted, by: task.ReconciledByVerify}}, verifies: 1, by: task.ReconciledByVerify},
		{state: worker.VerifyCompletedResultUnavailable, chargeFirst: true, modes: []verifyMode{resultLost},
			terminal: events.RunFailed, code: worker.CodeReconciliationResultUnavailable,
			records: []recordWant{{status: task.StatusCompleted, code: worker.CodeReconciliationResultUnavailable}}, verifies: 1},
		{state: worker.VerifyIndeterminate, chargeFirst: true, modes: []verifyMode{offline, honest}, terminal: events.RunCompleted,
			records: []recordWant{
				{status: task.StatusIndeterminate, code: worker.CodeReconciliationIndeterminate},
				{status: task.StatusCompleted, by: task.ReconciledByVerify}},
			verifies: 2, by: task.ReconciledByVerify},
	} {
		t.Run(string(c.state), func(t *testing.T) {
			t.Parallel()
			s := setup(t, reconcileConfig)
			l := newLedger(c.modes...)
			crash := s.crashingWorker(t, l, c.chargeFirst)
			runID := s.start(t, parsePlan(t, payPlan(t, planKey+fastRetry(2))))
			crash()
			startPayWorker(t, s.nats.JetStream(t), "survivor", func(_ context.Context, in worker.Input) (worker.Output, error) {
				return l.charge(in.IdempotencyKey), nil
			}, worker.WithVerify(l.verify))

			evs := s.waitTerminal(t, runID)
			require.Equal(t, c.terminal, terminal(evs))
			requireOncePerAttempt(t, evs)
			require.Equal(t, "2", attemptEnd(evs, "1").EngineAttemptID, "the survivor ended attempt 1, as its delivery 2")
			recs := s.requireRecords(t, runID, "order-42", evs, c.records...)
			require.Equal(t, c.by, requireSuccessIsReconciled(t, evs, recs))
			if c.code != "" {
				require.Equal(t, c.code, stepError(t, runID, evs).Code)
			}
			require.EqualValues(t, 1, l.asked.Load(), "the side effect was asked for once")
			require.Equal(t, c.verifies, l.calls.Load())
		})
	}
}

// A side effect completed before the engine's durable write is reported a
// success only through a reconciliation record or the verifier's result:
// a verifier that cannot tell, cannot be reached or lost the result leaves
// the step failed, never completed. Without a verifier the activity does
// not run again either: the crashed delivery's StepStarted says it began
// (docs/reconciliation.md), so the attempt fails as indeterminate.
func TestUnrecordedSideEffectIsNeverAnUnreconciledSuccess(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		verify bool
		mode   verifyMode
	}{
		{name: "verifier indeterminate", verify: true, mode: offline},
		{name: "verifier unavailable", verify: true, mode: unreachable},
		{name: "result unavailable", verify: true, mode: resultLost},
		{name: "no verifier"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, reconcileConfig)
			l := newLedger(c.mode)
			crash := s.crashingWorker(t, l, true)
			runID := s.start(t, parsePlan(t, payPlan(t, planKey+fastRetry(1))))
			crash()
			var opts []worker.ActivityOption
			if c.verify {
				opts = append(opts, worker.WithVerify(l.verify))
			}
			startPayWorker(t, s.nats.JetStream(t), "survivor", func(_ context.Context, in worker.Input) (worker.Output, error) {
				return l.charge(in.IdempotencyKey), nil
			}, opts...)

			evs := s.waitTerminal(t, runID)
			recs := s.records(t, runID)
			require.Len(t, recs, 1)
			requireSuccessIsReconciled(t, evs, recs)
			require.Nil(t, eventOf(evs, events.StepCompleted, "1"))
			require.NotEqual(t, events.RunCompleted, terminal(evs))
			require.Nil(t, recs[0].Result, "a completed record with a result only for a success")
			require.EqualValues(t, 1, l.asked.Load(), "the activity ran once")
			require.Equal(t, 1, l.chargedKeys(), "charged once")
		})
	}
}

// A worker reports the result, the engine records it, and the worker dies
// before it acks the task: the redelivery finds the record and reports it
// without running the activity or its verifier.
func TestRedeliveryAfterRecordUsesTheRecord(t *testing.T) {
	t.Parallel()
	s := setup(t, reconcileConfig)
	lookups := s.countLookups(t)
	runID := s.start(t, parsePlan(t, payPlan(t, planKey)))

	conn := s.nats.Conn(t)
	js, err := jetstream.New(conn)
	require.NoError(t, err)
	tk, _ := takeTask(t, js)
	require.Equal(t, "pay#1", tk.OperationID, "the plan's key makes the task keyed")
	require.EqualValues(t, 1, tk.FencingToken)
	require.False(t, tk.Resend)
	done := task.NewResult(tk, task.Completed, "1", "doomed")
	done.Output = json.RawMessage(`{"receipt":"receipt-1"}`)
	done.Reconcile = &task.ResultReconcile{OperationID: tk.OperationID, IdempotencyKey: tk.IdempotencyKey, Status: task.StatusCompleted}
	publishResult(t, js, done)
	s.waitEvent(t, runID, events.StepCompleted)
	conn.Close() // dies before the ack

	l := newLedger()
	var runs atomic.Int32
	startPayWorker(t, s.nats.JetStream(t), "survivor", func(_ context.Context, in worker.Input) (worker.Output, error) {
		runs.Add(1)
		return l.charge(in.IdempotencyKey), nil
	}, worker.WithVerify(l.verify))
	s.requireTasksDrained(t)

	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	requireOncePerAttempt(t, evs)
	requireSuccessIsReconciled(t, evs, s.records(t, runID))
	require.Zero(t, runs.Load(), "the activity did not run again")
	require.Zero(t, l.calls.Load(), "the record made verify unnecessary")
	require.EqualValues(t, 1, lookups.Load())
}

// A step with no key, plan or derived, claims no record and looks nothing
// up: after a crash its activity simply runs again (at-least-once), even
// with a verify hook registered.
func TestUnkeyedStepStaysAtLeastOnce(t *testing.T) {
	t.Parallel()
	s := setup(t, reconcileConfig)
	lookups := s.countLookups(t)
	l := newLedger()
	crash := s.crashingWorker(t, l, true)
	runID := s.start(t, parsePlan(t, payPlan(t, "")))
	crash()
	startPayWorker(t, s.nats.JetStream(t), "survivor", func(_ context.Context, in worker.Input) (worker.Output, error) {
		return l.charge(in.IdempotencyKey), nil
	}, worker.WithVerify(l.verify))

	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	require.EqualValues(t, 2, l.asked.Load(), "the activity ran again")
	require.Zero(t, l.calls.Load(), "no verify without a key")
	require.Zero(t, lookups.Load(), "no lookup without a key")
	require.Empty(t, s.records(t, runID), "no record without a key")
}

// takeTask fetches one task from the default queue's consumer (AckWait
// one second) and returns it with its message, unacked.
func takeTask(t *testing.T, js jetstream.JetStream) (task.Task, jetstream.Msg) {
	t.Helper()
	cc, err := streams.TaskConsumer("default", time.Second)
	require.NoError(t, err)
	cons, err := js.CreateOrUpdateConsumer(t.Context(), streams.TasksStream, cc)
	require.NoError(t, err)
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(waitFor))
	require.NoError(t, err)
	m, ok := <-batch.Messages()
	require.True(t, ok, "a task arrived")
	var tk task.Task
	require.NoError(t, json.Unmarshal(m.Data(), &tk))
	return tk, m
}

// requireTasksDrained waits until WEFT_TASKS is empty: every task acked.
func (s *stack) requireTasksDrained(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := s.js.Stream(t.Context(), streams.TasksStream)
		if err != nil {
			return false
		}
		info, err := st.Info(t.Context())
		return err == nil && info.State.Msgs == 0
	}, waitFor, 10*time.Millisecond)
}

// attemptEnd returns the event that ended logical attempt attempt of step
// "pay": StepCompleted, StepFailed or StepRetryScheduled.
func attemptEnd(evs []events.Event, attempt string) *events.Event {
	for _, typ := range []events.Type{events.StepCompleted, events.StepFailed, events.StepRetryScheduled} {
		if ev := eventOf(evs, typ, attempt); ev != nil {
			return ev
		}
	}
	return nil
}
