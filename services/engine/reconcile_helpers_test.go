package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
	"github.com/weftrun/weft/services/engine"
)

// The reconciliation tests' external system, workers and readers of the
// activity_reconciliations table.

// verifyMode is how the ledger's verifier answers.
type verifyMode int

const (
	honest      verifyMode = iota // completed-with-result when charged, else not-completed
	offline                       // indeterminate
	unreachable                   // an error: the verifier is unavailable
	resultLost                    // completed-result-unavailable when charged, else not-completed
	broken                        // completed-with-result without a result: a contradiction
)

// ledger is a payment service keyed by idempotency key: it charges a key
// once however often it is asked (its own dedupe), and can say whether a
// key was charged.
type ledger struct {
	mu      sync.Mutex
	charged map[string]string // key -> receipt
	modes   []verifyMode      // verify answers; the last one repeats
	asked   atomic.Int32      // charge requests, deduplicated or not
	calls   atomic.Int32      // verify calls
}

func newLedger(modes ...verifyMode) *ledger {
	if len(modes) == 0 {
		modes = []verifyMode{honest}
	}
	return &ledger{charged: map[string]string{}, modes: modes}
}

// charge is the side effect: it charges key once and returns its receipt.
func (l *ledger) charge(key string) worker.Output {
	l.asked.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.charged[key]; !ok {
		l.charged[key] = "receipt-" + strconv.Itoa(len(l.charged)+1)
	}
	out, _ := worker.NewOutput(map[string]string{"receipt": l.charged[key]})
	return out
}

// chargedKeys is how many distinct keys were charged.
func (l *ledger) chargedKeys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.charged)
}

// verify is the activity's verify hook, answering in the ledger's mode.
func (l *ledger) verify(_ context.Context, in worker.Input) (worker.Verification, error) {
	l.calls.Add(1)
	l.mu.Lock()
	mode := l.modes[0]
	if len(l.modes) > 1 {
		l.modes = l.modes[1:]
	}
	receipt, charged := l.charged[in.IdempotencyKey]
	l.mu.Unlock()
	switch {
	case mode == offline:
		return worker.Verification{State: worker.VerifyIndeterminate, Detail: "ledger offline"}, nil
	case mode == unreachable:
		return worker.Verification{}, errors.New("dial ledger: connection refused")
	case mode == broken:
		return worker.Verification{State: worker.VerifyCompletedWithResult}, nil
	case !charged:
		return worker.Verification{State: worker.VerifyNotCompleted}, nil
	case mode == resultLost:
		return worker.Verification{State: worker.VerifyCompletedResultUnavailable, Detail: "receipts purged"}, nil
	}
	out, _ := worker.NewOutput(map[string]string{"receipt": receipt})
	return worker.Verification{State: worker.VerifyCompletedWithResult, Result: &out}, nil
}

// payPlan is a one-step plan whose step "pay" runs activity "work" with
// the given step fields (an idempotencyKey, a retry policy, a timeout).
func payPlan(t *testing.T, fields string) string {
	t.Helper()
	return `{"planId":"pay","planVersion":"1","steps":[{"id":"pay","activity":"work"` + fields + `}]}`
}

// fastRetry is a retry policy of n attempts without a noticeable backoff.
func fastRetry(n int) string {
	return `,"retry":{"maxAttempts":` + strconv.Itoa(n) + `,"initialBackoff":"10ms","maxBackoff":"10ms"}`
}

// reconcileConfig runs retry timers promptly.
var reconcileConfig = engine.Config{TimerPollInterval: 20 * time.Millisecond}

// startPayWorker runs a pkg/worker worker of activity "work" with opts
// and a one-second AckWait on js, stopped when the test ends.
func startPayWorker(t *testing.T, js jetstream.JetStream, id string, fn worker.ActivityFunc, opts ...worker.ActivityOption) {
	t.Helper()
	w, err := worker.New(js, worker.Config{WorkerID: id, AckWait: time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Register("work", fn, opts...))
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
}

// crashingWorker runs a worker on its own connection whose activity, when
// chargeFirst, charges the ledger and then hangs, and otherwise hangs
// before charging. crash closes the connection once the activity is
// hanging: no result is published and the task is not acked, so JetStream
// redelivers it after AckWait, as after a worker process dying.
func (s *stack) crashingWorker(t *testing.T, l *ledger, chargeFirst bool) (crash func()) {
	t.Helper()
	hanging := make(chan struct{}, 1)
	conn := s.nats.Conn(t)
	js, err := jetstream.New(conn)
	require.NoError(t, err)
	startPayWorker(t, js, "doomed", func(ctx context.Context, in worker.Input) (worker.Output, error) {
		if chargeFirst {
			l.charge(in.IdempotencyKey)
		}
		hanging <- struct{}{}
		<-ctx.Done()
		return worker.Output{}, ctx.Err()
	})
	return func() {
		select {
		case <-hanging:
		case <-time.After(waitFor):
			t.Fatal("the doomed worker's activity never started")
		}
		conn.Close()
	}
}

// countLookups counts the reconciliation lookups workers send (a plain
// subscription sees every request, outside the engines' queue group).
func (s *stack) countLookups(t *testing.T) *atomic.Int32 {
	t.Helper()
	var n atomic.Int32
	nc := s.nats.Conn(t)
	sub, err := nc.Subscribe(streams.ReconcileSubject, func(*nats.Msg) { n.Add(1) })
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return &n
}

// records reads the run's reconciliation records, by logical attempt.
func (s *stack) records(t *testing.T, runID string) []task.ReconcileRecord {
	t.Helper()
	rows, err := s.db.Pool.Query(t.Context(), `
		SELECT activity_name, operation_id, idempotency_key, version, step_id, logical_attempt::text, status,
			result, error, reconciled_by, coalesce(diagnostics, '{}'), created_at, updated_at
		FROM activity_reconciliations WHERE run_id = $1 ORDER BY logical_attempt`, runID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (task.ReconcileRecord, error) {
		r := task.ReconcileRecord{RunID: runID}
		var result, stepErr, diag []byte
		err := row.Scan(&r.ActivityName, &r.OperationID, &r.IdempotencyKey, &r.Version, &r.StepID, &r.LogicalAttemptID,
			&r.Status, &result, &stepErr, &r.ReconciledBy, &diag, &r.CreatedAt, &r.UpdatedAt)
		if err == nil && result != nil {
			err = json.Unmarshal(result, &r.Result)
		}
		if err == nil && stepErr != nil {
			err = json.Unmarshal(stepErr, &r.Error)
		}
		if err == nil {
			err = json.Unmarshal(diag, &r.Diagnostics)
		}
		return r, err
	})
	require.NoError(t, err)
	return out
}

// requireRecords checks the run's records against want: per logical
// attempt its status and, for a failure, its error code ("" for a
// completed record with a result). Every record is version 1, of step
// "pay", activity "work" and key, created at its attempt's StepScheduled.
func (s *stack) requireRecords(t *testing.T, runID, key string, evs []events.Event, want ...recordWant) []task.ReconcileRecord {
	t.Helper()
	recs := s.records(t, runID)
	require.Len(t, recs, len(want), "records: %+v", recs)
	for i, w := range want {
		r := recs[i]
		attempt := strconv.Itoa(i + 1)
		require.Equal(t, 1, r.Version)
		require.Equal(t, "work", r.ActivityName)
		require.Equal(t, "pay#"+attempt, r.OperationID)
		require.Equal(t, key, r.IdempotencyKey)
		require.Equal(t, attempt, r.LogicalAttemptID)
		require.Equal(t, w.status, r.Status, "attempt %s", attempt)
		require.Equal(t, w.by, r.ReconciledBy, "attempt %s", attempt)
		if w.code == "" {
			require.NotNil(t, r.Result, "attempt %s has its result", attempt)
			require.Nil(t, r.Error)
		} else {
			require.Nil(t, r.Result, "attempt %s has no result", attempt)
			require.Equal(t, w.code, r.Error.Code, "attempt %s", attempt)
		}
		scheduled := eventOf(evs, events.StepScheduled, attempt)
		require.NotNil(t, scheduled)
		require.True(t, scheduled.EmittedAt.Equal(r.CreatedAt), "createdAt is the StepScheduled time")
		require.False(t, r.UpdatedAt.Before(r.CreatedAt))
	}
	return recs
}

// recordWant is one expected record.
type recordWant struct {
	status task.ReconcileStatus
	code   string // the error code; "" for a completed record with a result
	by     string // ReconciledBy
}

// eventOf returns step "pay"'s event of type typ in logical attempt attempt.
func eventOf(evs []events.Event, typ events.Type, attempt string) *events.Event {
	for i := range evs {
		if evs[i].EventType == typ && evs[i].StepID == "pay" && evs[i].LogicalAttemptID == attempt {
			return &evs[i]
		}
	}
	return nil
}

// requireSuccessIsReconciled checks the rule the contract makes of a keyed
// step: every StepCompleted of step "pay" has a completed record with the
// same result, written with it, so a success is never reported without a
// durable record. It returns how the last success was reconciled.
func requireSuccessIsReconciled(t *testing.T, evs []events.Event, recs []task.ReconcileRecord) string {
	t.Helper()
	by := ""
	for _, ev := range evs {
		if ev.EventType != events.StepCompleted || ev.StepID != "pay" {
			continue
		}
		var data struct {
			Output       json.RawMessage `json:"output"`
			ReconciledBy string          `json:"reconciledBy"`
		}
		require.NoError(t, ev.Data(&data))
		i := slicesIndex(recs, "pay#"+ev.LogicalAttemptID)
		require.GreaterOrEqual(t, i, 0, "StepCompleted of attempt %s has a record", ev.LogicalAttemptID)
		require.Equal(t, task.StatusCompleted, recs[i].Status)
		require.JSONEq(t, string(data.Output), string(recs[i].Result.Output))
		require.Equal(t, data.ReconciledBy, recs[i].ReconciledBy)
		by = data.ReconciledBy
	}
	return by
}

func slicesIndex(recs []task.ReconcileRecord, op string) int {
	for i, r := range recs {
		if r.OperationID == op {
			return i
		}
	}
	return -1
}

// stepError returns step "pay"'s error as the projector's snapshot shows it.
func stepError(t *testing.T, runID string, evs []events.Event) *events.StepError {
	t.Helper()
	snap, err := events.Project(runID, evs)
	require.NoError(t, err)
	for _, st := range snap.Steps {
		if st.StepID == "pay" {
			return st.Error
		}
	}
	t.Fatal("no step pay in the snapshot")
	return nil
}
