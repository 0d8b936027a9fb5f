package engine_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// The reconciliation records in Postgres (round.ReconciliationInsertTx and
// round.ReconciliationGet, migration 0006): one record per operation,
// first write wins, the lookup's record and prior, the refusals, and
// retention with the run.

func storeRecord(runID, op, key string, status task.ReconcileStatus, at time.Time) task.ReconcileRecord {
	step, attempt, _ := task.StepOfOperation(op)
	r := task.ReconcileRecord{Version: 1, RunID: runID, ActivityName: "charge", OperationID: op, IdempotencyKey: key,
		StepID: step, LogicalAttemptID: attempt, Status: status, CreatedAt: at, UpdatedAt: at.Add(time.Second)}
	if status == task.StatusCompleted {
		r.Result = &task.ReconcileResult{Output: json.RawMessage(`{"receipt":"r-1"}`),
			Artifacts: []events.ArtifactRef{{URI: "s3://b/receipt", Kind: "receipt"}}}
	} else {
		r.Error = &events.StepError{Code: "BUSY", Message: "busy", Retryable: true, Category: "ACTIVITY"}
		r.Diagnostics = map[string]string{"verifyState": "indeterminate"}
	}
	return r
}

func (s *stack) insertRecords(t *testing.T, recs ...task.ReconcileRecord) {
	t.Helper()
	require.NoError(t, pgx.BeginFunc(t.Context(), s.db.Pool, func(tx pgx.Tx) error {
		return round.ReconciliationInsertTx(t.Context(), tx, recs)
	}))
}

func TestReconciliationStore(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	runID := s.start(t, parsePlan(t, payPlan(t, planKey)))
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	failed := storeRecord(runID, "pay#1", "order-42", task.StatusFailed, t0)
	completed := storeRecord(runID, "pay#2", "order-42", task.StatusCompleted, t0.Add(time.Minute))
	s.insertRecords(t, failed, completed)

	get := func(op, key string) task.ReconcileReply {
		t.Helper()
		reply, err := round.ReconciliationGet(t.Context(), s.db.Pool, task.ReconcileRequest{
			SchemaVersion: 1, RunID: runID, ActivityName: "charge", OperationID: op, IdempotencyKey: key})
		require.NoError(t, err)
		require.Equal(t, 1, reply.SchemaVersion)
		return reply
	}
	reply := get("pay#2", "order-42")
	require.Equal(t, &completed, reply.Record, "the record reads back field for field")
	require.Equal(t, &failed, reply.Prior, "the other operation of the key")

	// First write wins: a second record of an operation changes nothing.
	again := completed
	again.Status, again.Result, again.Error = task.StatusFailed, nil, failed.Error
	s.insertRecords(t, again)
	require.Equal(t, &completed, get("pay#2", "order-42").Record)

	// Another key or operation is another scope: nothing found.
	none := get("pay#3", "order-42")
	require.Nil(t, none.Record)
	require.Equal(t, &completed, none.Prior, "the latest record of the key")
	other := get("pay#2", "order-43")
	require.Nil(t, other.Record)
	require.Nil(t, other.Prior)
	// So are another activity and another run (the contract's key scope:
	// workflowId, activityName, operationId, idempotencyKey).
	for _, req := range []task.ReconcileRequest{
		{SchemaVersion: 1, RunID: runID, ActivityName: "refund", OperationID: "pay#2", IdempotencyKey: "order-42"},
		{SchemaVersion: 1, RunID: events.NewRunID(), ActivityName: "charge", OperationID: "pay#2", IdempotencyKey: "order-42"},
	} {
		reply, err := round.ReconciliationGet(t.Context(), s.db.Pool, req)
		require.NoError(t, err)
		require.Nil(t, reply.Record, "%+v", req)
		require.Nil(t, reply.Prior, "%+v", req)
	}

	for _, bad := range []task.ReconcileRequest{
		{RunID: "not-a-uuid", ActivityName: "charge", OperationID: "pay#1", IdempotencyKey: "k"},
		{RunID: runID, ActivityName: "", OperationID: "pay#1", IdempotencyKey: "k"},
		{RunID: runID, ActivityName: "charge", OperationID: "pay#1", IdempotencyKey: ""},
	} {
		_, err := round.ReconciliationGet(t.Context(), s.db.Pool, bad)
		require.ErrorIs(t, err, round.ErrBadLookup)
	}
}

// Records live as long as their run: deleting a run (retention,
// weft_run_delete) deletes its records and no other run's.
func TestReconciliationRetention(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	gone := s.start(t, parsePlan(t, payPlan(t, planKey)))
	kept := s.start(t, parsePlan(t, payPlan(t, planKey)))
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	s.insertRecords(t, storeRecord(gone, "pay#1", "order-42", task.StatusCompleted, at),
		storeRecord(kept, "pay#1", "order-42", task.StatusCompleted, at))

	require.NoError(t, s.log.RunDelete(t.Context(), gone))
	require.Empty(t, s.records(t, gone))
	require.Len(t, s.records(t, kept), 1)
}

// A record whose run has no events (no head row) is refused: records are
// written only in the rounds of runs the log knows.
func TestReconciliationNeedsTheRun(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	err := pgx.BeginFunc(t.Context(), s.db.Pool, func(tx pgx.Tx) error {
		return round.ReconciliationInsertTx(t.Context(), tx, []task.ReconcileRecord{
			storeRecord(events.NewRunID(), "pay#1", "k", task.StatusFailed, time.Now().UTC())})
	})
	require.ErrorContains(t, err, "foreign key")
}

// The engine answers lookups over NATS: the records found, nothing for an
// unknown operation, and an error, never "no record", for a request it
// cannot make sense of.
func TestReconcileLookupOverNATS(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	runID := s.start(t, parsePlan(t, payPlan(t, planKey)))
	rec := storeRecord(runID, "pay#1", "order-42", task.StatusCompleted, time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	s.insertRecords(t, rec)
	nc := s.nats.Conn(t)
	ask := func(body string) task.ReconcileReply {
		t.Helper()
		m, err := nc.RequestWithContext(t.Context(), streams.ReconcileSubject, []byte(body))
		require.NoError(t, err)
		var reply task.ReconcileReply
		require.NoError(t, json.Unmarshal(m.Data, &reply))
		require.Equal(t, 1, reply.SchemaVersion)
		return reply
	}
	request := func(op string) string {
		b, err := json.Marshal(task.ReconcileRequest{SchemaVersion: 1, RunID: runID, ActivityName: "charge",
			OperationID: op, IdempotencyKey: "order-42", Token: lookupToken(runID, op)})
		require.NoError(t, err)
		return string(b)
	}
	found := ask(request("pay#1"))
	require.Empty(t, found.Error)
	require.Equal(t, &rec, found.Record)
	none := ask(request("pay#2"))
	require.Empty(t, none.Error)
	require.Nil(t, none.Record)
	require.Equal(t, &rec, none.Prior)
	require.Contains(t, ask(`not json`).Error, "not a ReconcileRequest")
	require.Contains(t, ask(`{"runId":"x","activityName":"charge","operationId":"a#1","idempotencyKey":"k","token":"`+
		lookupToken("x", "a#1")+`"}`).Error, "bad reconciliation lookup")
}

// Issue 16, defect 4, last gap: an attempt a worker began (its keyed
// StepStarted is in the log) and whose outcome never arrived has no
// record, and the lookup says it started, so that a worker beyond the
// bus's dedupe window does not take it for "never run". A StepStarted
// under another key, or of another attempt, is not this operation's; once
// the record exists the record is the answer.
func TestReconcileLookupAnswersStarted(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	runID := s.start(t, parsePlan(t, payPlan(t, planKey)))
	js := s.nats.JetStream(t)
	tk, _ := takeTask(t, js)
	get := func(op, key string) task.ReconcileReply {
		t.Helper()
		req, err := json.Marshal(task.ReconcileRequest{SchemaVersion: 1, RunID: runID, ActivityName: "work",
			OperationID: op, IdempotencyKey: key, Token: lookupToken(runID, op)})
		require.NoError(t, err)
		m, err := s.nats.Conn(t).RequestWithContext(t.Context(), streams.ReconcileSubject, req)
		require.NoError(t, err)
		var reply task.ReconcileReply
		require.NoError(t, json.Unmarshal(m.Data, &reply))
		require.Empty(t, reply.Error)
		return reply
	}
	require.Nil(t, get(tk.OperationID, tk.IdempotencyKey).Started, "nothing began the attempt yet")

	started := task.NewResult(tk, task.Started, "1", "first")
	started.Reconcile = &task.ResultReconcile{OperationID: tk.OperationID, IdempotencyKey: tk.IdempotencyKey}
	publishResult(t, js, started)
	evs := s.waitEvent(t, runID, events.StepStarted)

	reply := get(tk.OperationID, tk.IdempotencyKey)
	require.Nil(t, reply.Record, "no outcome, no record")
	require.NotNil(t, reply.Started, "the log's StepStarted says the attempt began")
	require.Equal(t, task.ReconcileStarted{StepID: "pay", LogicalAttemptID: "1", EngineAttemptID: "1",
		WorkerID: "first", StartedAt: eventOf(evs, events.StepStarted, "1").PersistedAt.UTC()}, *reply.Started)
	require.Nil(t, get(tk.OperationID, "order-43").Started, "another key is another operation")
	require.Nil(t, get("pay#2", tk.IdempotencyKey).Started, "another attempt is another operation")

	rec := storeRecord(runID, tk.OperationID, tk.IdempotencyKey, task.StatusFailed, time.Now().UTC())
	rec.ActivityName = "work"
	s.insertRecords(t, rec)
	reply = get(tk.OperationID, tk.IdempotencyKey)
	require.NotNil(t, reply.Record)
	require.Nil(t, reply.Started, "the record answers")
}
