package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// These tests drive the worker's side of reconciliation against a fake of
// the engine's lookup (the engine's tests run the real one, on Postgres).

// fakeEngine answers reconciliation lookups from records it was given.
type fakeEngine struct {
	mu       sync.Mutex
	records  map[string]task.ReconcileRecord // by operationId + "|" + key
	prior    *task.ReconcileRecord
	failWith string
	requests []task.ReconcileRequest
	// started holds, by operationId + "|" + key, the StepStarted the
	// engine's log would hold of an operation with no record.
	started map[string]task.ReconcileStarted
	// bus, when set, answers Started as the engine does once it has logged
	// the keyed StepStarted the run's result subject holds last.
	bus jetstream.JetStream
}

// serveLookups answers the bundle's lookups until the test ends.
func (b *bundle) serveLookups(t *testing.T) *fakeEngine {
	t.Helper()
	f := &fakeEngine{records: map[string]task.ReconcileRecord{}, started: map[string]task.ReconcileStarted{}}
	nc := b.nats.Conn(t)
	sub, err := nc.QueueSubscribe(streams.ReconcileSubject, streams.ReconcileQueue, func(m *nats.Msg) {
		var req task.ReconcileRequest
		if err := json.Unmarshal(m.Data, &req); err != nil {
			panic(err)
		}
		f.mu.Lock()
		f.requests = append(f.requests, req)
		reply := task.ReconcileReply{SchemaVersion: 1, Prior: f.prior, Error: f.failWith}
		if rec, ok := f.records[req.OperationID+"|"+req.IdempotencyKey]; ok {
			reply.Record = &rec
		} else if st, ok := f.started[req.OperationID+"|"+req.IdempotencyKey]; ok {
			reply.Started = &st
		}
		bus := f.bus
		f.mu.Unlock()
		if reply.Record == nil && reply.Started == nil && bus != nil {
			reply.Started = startedOnBus(bus, req)
		}
		data, _ := json.Marshal(reply)
		_ = m.Respond(data)
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return f
}

func (f *fakeEngine) put(rec task.ReconcileRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records[rec.OperationID+"|"+rec.IdempotencyKey] = rec
}

// putStarted makes the fake answer that operation op of key began, as
// the engine does when its log holds the attempt's keyed StepStarted.
func (f *fakeEngine) putStarted(op, key string, st task.ReconcileStarted) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started[op+"|"+key] = st
}

// answerFromBus makes the fake answer Started from the run's results on
// js (startedOnBus).
func (f *fakeEngine) answerFromBus(js jetstream.JetStream) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bus = js
}

// startedOnBus is the Started the engine would answer for req had it
// logged the last result on the run's subject: that result when it is a
// StepStarted of req's operation and key, else nil.
func startedOnBus(js jetstream.JetStream, req task.ReconcileRequest) *task.ReconcileStarted {
	filter, err := streams.RunResultsFilter(req.RunID) // stored as weft.results.<partition>.<runId>
	if err != nil {
		return nil
	}
	stream, err := js.Stream(context.Background(), streams.ResultsStream)
	if err != nil {
		return nil
	}
	m, err := stream.GetLastMsgForSubject(context.Background(), filter)
	if err != nil {
		return nil
	}
	var r task.Result
	if json.Unmarshal(m.Data, &r) != nil || r.Kind != task.Started || r.Reconcile == nil ||
		r.Reconcile.OperationID != req.OperationID || r.Reconcile.IdempotencyKey != req.IdempotencyKey {
		return nil
	}
	return &task.ReconcileStarted{StepID: r.StepID, LogicalAttemptID: r.LogicalAttemptID,
		EngineAttemptID: r.EngineAttemptID, WorkerID: r.WorkerID, StartedAt: m.Time}
}

func (f *fakeEngine) lookups() []task.ReconcileRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]task.ReconcileRequest(nil), f.requests...)
}

// keyedTask is a task of activity whose plan step has the key
// "order-42": logical attempt logical, so any attempt but "1" may have run
// before.
func keyedTask(activity, logical string) task.Task {
	tk := newTask(activity, `{"orderId":"42"}`)
	tk.LogicalAttemptID, tk.IdempotencyKey = logical, "order-42"
	tk.OperationID = task.OperationID(tk.StepID, logical)
	tk.FencingToken = 7
	return tk
}

// counted is an activity that counts its runs and echoes its input.
type counted struct{ runs atomic.Int32 }

func (c *counted) run(ctx context.Context, in worker.Input) (worker.Output, error) {
	c.runs.Add(1)
	return echo(ctx, in)
}

// verifier answers every verify call with v and err, and counts calls.
type verifier struct {
	v     worker.Verification
	err   error
	calls atomic.Int32
	keys  chan string
}

func (f *verifier) verify(_ context.Context, in worker.Input) (worker.Verification, error) {
	f.calls.Add(1)
	if f.keys != nil {
		f.keys <- in.IdempotencyKey
	}
	return f.v, f.err
}

// requireReconcile checks a keyed result's reconciliation report.
func requireReconcile(t *testing.T, tk task.Task, r task.Result, status task.ReconcileStatus, by string) {
	t.Helper()
	require.NotNil(t, r.Reconcile, "%s carries its reconciliation report", r.Kind)
	require.Equal(t, task.OperationID(tk.StepID, tk.LogicalAttemptID), r.Reconcile.OperationID)
	require.Equal(t, tk.IdempotencyKey, r.Reconcile.IdempotencyKey)
	require.Equal(t, status, r.Reconcile.Status)
	require.Equal(t, by, r.Reconcile.ReconciledBy)
}

// The first delivery of logical attempt 1 cannot have run before: a keyed
// activity runs without a lookup or a verify, and its results carry the
// reconciliation scope and status. Its input carries the fencing token.
func TestReconcileFirstDeliveryRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	engine := b.serveLookups(t)
	act, ver := &counted{}, &verifier{v: worker.Verification{State: worker.VerifyIndeterminate}}
	tokens := make(chan uint64, 1)
	b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("charge", func(ctx context.Context, in worker.Input) (worker.Output, error) {
			tokens <- in.FencingToken
			return act.run(ctx, in)
		}, worker.WithVerify(ver.verify)))
	})
	tk := keyedTask("charge", "1")
	results := b.results(t, tk.RunID)
	publishTask(t, b.js, tk)
	started := results.next()
	requireResult(t, tk, task.Started, "1", started)
	requireReconcile(t, tk, started, "", "")
	done := results.next()
	requireResult(t, tk, task.Completed, "1", done)
	requireReconcile(t, tk, done, task.StatusCompleted, "")
	require.EqualValues(t, 7, <-tokens)
	require.EqualValues(t, 1, act.runs.Load())
	require.Zero(t, ver.calls.Load())
	require.Empty(t, engine.lookups())
	b.requireTasksSettled(t)
}

// An unkeyed attempt is never reconciled: a retry (logical attempt 2) runs
// at once, with no lookup, and its results carry no reconciliation report,
// as before reconciliation existed (at-least-once).
func TestReconcileUnkeyedStaysAtLeastOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	engine := b.serveLookups(t)
	act, ver := &counted{}, &verifier{v: worker.Verification{State: worker.VerifyIndeterminate}}
	b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("echo", act.run, worker.WithVerify(ver.verify)))
	})
	tk := newTask("echo", `{}`) // the engine's derived key, no operationId
	tk.LogicalAttemptID, tk.Resend = "2", true
	results := b.results(t, tk.RunID)
	publishTask(t, b.js, tk)
	started := results.next()
	require.Nil(t, started.Reconcile)
	done := results.next()
	requireResult(t, tk, task.Completed, "1", done)
	require.Nil(t, done.Reconcile)
	require.EqualValues(t, 1, act.runs.Load())
	require.Zero(t, ver.calls.Load())
	require.Empty(t, engine.lookups())
}

// A durable record of the operation is reported as it is, and neither the
// activity nor the verifier runs: a completed record with its result, any
// other record with its error.
func TestReconcileReportsTheRecord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	engine := b.serveLookups(t)
	act, ver := &counted{}, &verifier{v: worker.Verification{State: worker.VerifyNotCompleted}}
	b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("charge", act.run, worker.WithVerify(ver.verify)))
	})
	retryable := &events.StepError{Code: "CARD_DECLINED", Message: "declined", Retryable: true, Category: "ACTIVITY"}
	var tokens []string
	for _, rec := range []task.ReconcileRecord{
		{Status: task.StatusCompleted, Result: &task.ReconcileResult{Output: json.RawMessage(`{"charged":true}`),
			Artifacts: []events.ArtifactRef{{URI: "s3://b/receipt", Kind: "receipt"}}}},
		{Status: task.StatusFailed, Error: retryable},
		{Status: task.StatusCompleted, Error: &events.StepError{Code: worker.CodeReconciliationResultUnavailable, Message: "gone"}},
	} {
		tk := keyedTask("charge", "3")
		tk.Token = "v1.token-of-" + tk.RunID
		tokens = append(tokens, tk.Token)
		rec.OperationID, rec.IdempotencyKey = tk.OperationID, tk.IdempotencyKey
		engine.put(rec)
		results := b.results(t, tk.RunID)
		publishTask(t, b.js, tk)
		r := results.final()
		requireReconcile(t, tk, r, rec.Status, task.ReconciledByRecord)
		require.Equal(t, tk.Token, r.Token, "the result echoes the task's token")
		if rec.Result != nil {
			requireResult(t, tk, task.Completed, "1", r)
			require.JSONEq(t, `{"charged":true}`, string(r.Output))
			require.Equal(t, rec.Result.Artifacts, r.Artifacts)
			continue
		}
		requireResult(t, tk, task.Failed, "1", r)
		require.Equal(t, *rec.Error, *r.Error)
	}
	require.Zero(t, act.runs.Load(), "the activity never ran")
	require.Zero(t, ver.calls.Load(), "the record made verify unnecessary")
	require.Len(t, engine.lookups(), 3)
	require.Equal(t, task.ReconcileRequest{SchemaVersion: 1, RunID: engine.lookups()[0].RunID, ActivityName: "charge",
		OperationID: "build#3", IdempotencyKey: "order-42", Token: tokens[0]}, engine.lookups()[0], "the lookup carries the task's token")
	b.requireTasksSettled(t)
}

// Without a record, the verify hook decides, per the verify-state table;
// anything malformed or contradicting a durable record fails closed.
func TestReconcileVerifyStates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	engine := b.serveLookups(t)
	completedPrior := &task.ReconcileRecord{OperationID: "other#1", Status: task.StatusCompleted}
	result := &worker.Output{JSON: json.RawMessage(`{ "charged" : true }`)}
	tests := []struct {
		name      string
		v         worker.Verification
		err       error
		prior     *task.ReconcileRecord
		runs      bool // the activity runs
		kind      task.Kind
		code      string
		retryable bool
		status    task.ReconcileStatus
	}{
		{name: "not-completed", v: worker.Verification{State: worker.VerifyNotCompleted},
			runs: true, kind: task.Completed, status: task.StatusCompleted},
		{name: "completed-with-result", v: worker.Verification{State: worker.VerifyCompletedWithResult, Result: result},
			kind: task.Completed, status: task.StatusCompleted},
		{name: "completed-result-unavailable", v: worker.Verification{State: worker.VerifyCompletedResultUnavailable},
			kind: task.Failed, code: worker.CodeReconciliationResultUnavailable, status: task.StatusCompleted},
		{name: "indeterminate", v: worker.Verification{State: worker.VerifyIndeterminate, Detail: "ledger offline"},
			kind: task.Failed, code: worker.CodeReconciliationIndeterminate, retryable: true, status: task.StatusIndeterminate},
		{name: "verifier unavailable", err: errors.New("connection refused"),
			kind: task.Failed, code: worker.CodeReconciliationIndeterminate, retryable: true, status: task.StatusIndeterminate},
		{name: "completed-with-result without a result", v: worker.Verification{State: worker.VerifyCompletedWithResult},
			kind: task.Failed, code: worker.CodeReconciliationContradiction, status: task.StatusIndeterminate},
		{name: "unknown state", v: worker.Verification{State: "probably"},
			kind: task.Failed, code: worker.CodeReconciliationContradiction, status: task.StatusIndeterminate},
		{name: "not-completed with a result", v: worker.Verification{State: worker.VerifyNotCompleted, Result: result},
			kind: task.Failed, code: worker.CodeReconciliationContradiction, status: task.StatusIndeterminate},
		{name: "not-completed against a completed record", v: worker.Verification{State: worker.VerifyNotCompleted},
			prior: completedPrior, kind: task.Failed, code: worker.CodeReconciliationContradiction, status: task.StatusIndeterminate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Not parallel: the fake engine's prior record is shared.
			engine.mu.Lock()
			engine.prior = tt.prior
			engine.mu.Unlock()
			act, ver := &counted{}, &verifier{v: tt.v, err: tt.err, keys: make(chan string, 1)}
			w := b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
				require.NoError(t, w.Register("charge", act.run, worker.WithVerify(ver.verify)))
			})
			tk := keyedTask("charge", "2")
			results := b.results(t, tk.RunID)
			publishTask(t, b.js, tk)
			r := results.final()
			require.Equal(t, tt.kind, r.Kind)
			require.Equal(t, "order-42", <-ver.keys, "verify sees the attempt's key")
			require.Equal(t, tt.runs, act.runs.Load() == 1, "the activity runs only on not-completed")
			by := task.ReconciledByVerify
			if tt.runs || tt.kind == task.Failed {
				by = ""
			}
			requireReconcile(t, tk, r, tt.status, by)
			switch {
			case tt.runs:
				require.JSONEq(t, `{"orderId":"42"}`, string(r.Output), "the activity's own output")
			case tt.kind == task.Completed:
				require.Equal(t, `{"charged":true}`, string(r.Output), "the verifier's result, compacted")
			default:
				requireFailed(t, tk, r, tt.code, tt.retryable)
				require.Equal(t, worker.CategoryReconciliation, r.Error.Category)
				require.NotEmpty(t, r.Reconcile.Diagnostics, "diagnostics for the operator")
			}
			if tt.code == worker.CodeReconciliationContradiction {
				require.NotEmpty(t, r.Reconcile.Diagnostics["contradiction"])
			}
			require.NoError(t, w.Stop(t.Context()))
		})
	}
}

// A lookup the engine cannot answer is never taken for "no record": the
// attempt fails, retryable, and neither the verifier nor the activity runs.
func TestReconcileLookupUnavailable(t *testing.T) {
	t.Parallel()
	for _, answered := range []bool{false, true} {
		b := setup(t)
		if answered {
			engine := b.serveLookups(t)
			engine.mu.Lock()
			engine.failWith = "database unreachable"
			engine.mu.Unlock()
		} // else no engine answers: no responders
		act, ver := &counted{}, &verifier{v: worker.Verification{State: worker.VerifyNotCompleted}}
		b.startWorker(t, nil, worker.Config{PublishTimeout: time.Second}, func(w *worker.Worker) {
			require.NoError(t, w.Register("charge", act.run, worker.WithVerify(ver.verify)))
		})
		tk := keyedTask("charge", "2")
		results := b.results(t, tk.RunID)
		publishTask(t, b.js, tk)
		r := results.final()
		requireFailed(t, tk, r, worker.CodeReconciliationIndeterminate, true)
		requireReconcile(t, tk, r, task.StatusIndeterminate, "")
		require.Equal(t, "unavailable", r.Reconcile.Diagnostics["lookup"])
		require.Zero(t, act.runs.Load())
		require.Zero(t, ver.calls.Load())
	}
}

// A keyed activity without a verify hook runs again when there is no
// record: its key is then the external system's dedupe. An engine re-send
// (delivery 1 of logical attempt 1, marked resend) is looked up too.
func TestReconcileWithoutVerifyRunsAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	engine := b.serveLookups(t)
	act := &counted{}
	b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("charge", act.run))
	})
	tk := keyedTask("charge", "1")
	tk.Resend = true
	results := b.results(t, tk.RunID)
	publishTask(t, b.js, tk)
	r := results.final()
	requireResult(t, tk, task.Completed, "1", r)
	requireReconcile(t, tk, r, task.StatusCompleted, "")
	require.EqualValues(t, 1, act.runs.Load())
	require.Len(t, engine.lookups(), 1, "the re-send looked for a record first")
}

// A key the activity derives from its input makes the attempt keyed though
// the plan step has none: the lookup and the results use the derived key.
func TestReconcileDerivedKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	engine := b.serveLookups(t)
	act := &counted{}
	b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("charge", act.run, worker.WithIdempotencyKey(func(in worker.Input) (string, error) {
			return "order/" + string(in.JSON), nil
		})))
	})
	tk := newTask("charge", `42`)
	tk.LogicalAttemptID = "2"
	engine.put(task.ReconcileRecord{OperationID: "build#2", IdempotencyKey: "order/42", Status: task.StatusCompleted,
		Result: &task.ReconcileResult{Output: json.RawMessage(`"done"`)}})
	results := b.results(t, tk.RunID)
	publishTask(t, b.js, tk)
	started := results.next()
	require.Equal(t, &task.ResultReconcile{OperationID: "build#2", IdempotencyKey: "order/42"}, started.Reconcile)
	r := results.next()
	require.Equal(t, task.Completed, r.Kind)
	require.Equal(t, `"done"`, string(r.Output))
	require.Equal(t, task.ReconciledByRecord, r.Reconcile.ReconciledBy)
	require.Zero(t, act.runs.Load())
}

// The record status of a keyed attempt's own outcome: a failure marked as
// after a possible side effect is indeterminate, the deadline timed-out, a
// plain failure failed, a refused output completed (the side effect
// happened), a cancel notice cancelled.
func TestReconcileOutcomeStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate()
	b.startWorker(t, nil, worker.Config{Concurrency: 8}, func(w *worker.Worker) {
		require.NoError(t, w.Register("after", func(context.Context, worker.Input) (worker.Output, error) {
			return worker.Output{}, worker.FailedAfterSideEffect("GATEWAY_TIMEOUT", "sent, no answer")
		}))
		require.NoError(t, w.Register("before", func(context.Context, worker.Input) (worker.Output, error) {
			return worker.Output{}, worker.Retryable("BUSY", "try later")
		}))
		require.NoError(t, w.Register("slow", untilDone, worker.WithTimeout(20*time.Millisecond)))
		require.NoError(t, w.Register("bad-output", func(context.Context, worker.Input) (worker.Output, error) {
			return worker.Output{JSON: []byte(`{`)}, nil
		}))
		require.NoError(t, w.Register("gate", g.run))
	})
	for _, c := range []struct {
		activity string
		code     string
		status   task.ReconcileStatus
	}{
		{"after", "GATEWAY_TIMEOUT", task.StatusIndeterminate},
		{"before", "BUSY", task.StatusFailed},
		{"slow", worker.CodeTimeout, task.StatusTimedOut},
		{"bad-output", worker.CodeInvalidOutput, task.StatusCompleted},
		{"gate", worker.CodeCancelled, task.StatusCancelled},
	} {
		tk := keyedTask(c.activity, "1")
		results := b.results(t, tk.RunID)
		publishTask(t, b.js, tk)
		if c.activity == "gate" {
			g.awaitStart(t)
			sendCancel(t, b, task.Cancel{SchemaVersion: 1, RunID: tk.RunID, Reason: "stop"})
		}
		r := results.final()
		require.Equal(t, c.code, r.Error.Code, c.activity)
		requireReconcile(t, tk, r, c.status, "")
	}
}

func TestWithVerifyRefusesNil(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := worker.New(b.js, worker.Config{})
	require.NoError(t, err)
	require.ErrorIs(t, w.Register("x", echo, worker.WithVerify(nil)), worker.ErrInvalidConfig)
}
