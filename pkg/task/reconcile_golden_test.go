package task_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

// The reconciliation messages and record (docs/reconciliation.md) as
// today's engine and workers write them, in testdata/persisted beside the
// v1 task and results. Every field is additive to schemaVersion 1: the v1
// goldens without them still decode (persisted_golden_test.go).

func goldenRecord() task.ReconcileRecord {
	return task.ReconcileRecord{
		Version: task.RecordVersion, RunID: goldenRun, ActivityName: "charge", OperationID: "pay#2",
		IdempotencyKey: "order-42", StepID: "pay", LogicalAttemptID: "2", Status: task.StatusCompleted,
		Result: &task.ReconcileResult{Output: json.RawMessage(`{"receipt":"r-1"}`),
			Artifacts: []events.ArtifactRef{{URI: "s3://bucket/receipt", Kind: "receipt"}}},
		ReconciledBy: task.ReconciledByVerify,
		CreatedAt:    goldenT0, UpdatedAt: goldenT0.Add(90 * time.Second),
	}
}

func goldenFailedRecord() task.ReconcileRecord {
	return task.ReconcileRecord{
		Version: task.RecordVersion, RunID: goldenRun, ActivityName: "charge", OperationID: "pay#1",
		IdempotencyKey: "order-42", StepID: "pay", LogicalAttemptID: "1", Status: task.StatusIndeterminate,
		Error: &events.StepError{Code: task.CodeReconciliationContradiction, Message: "reconciliation failed closed",
			Category: task.CategoryReconciliation},
		Diagnostics: map[string]string{"verifyState": "probably", "contradiction": "unknown state"},
		CreatedAt:   goldenT0, UpdatedAt: goldenT0.Add(time.Second),
	}
}

func reconcileMessages() []goldentest.Record {
	keyed := func() task.Task {
		tk := goldenTask()
		tk.LogicalAttemptID, tk.IdempotencyKey = "2", "order-42"
		tk.OperationID, tk.FencingToken, tk.Resend = task.OperationID("extract", "2"), 2, true
		return tk
	}
	wantKeyed := goldenTask()
	wantKeyed.IdempotencyKey, wantKeyed.OperationID, wantKeyed.FencingToken, wantKeyed.Resend = "order-42", "extract#2", 2, true
	reconciled := func() task.Result {
		r := task.NewResult(keyed(), task.Completed, "3", "worker-1")
		r.EmittedAt, r.Output = goldenT0, json.RawMessage(`{"receipt":"r-1"}`)
		r.Reconcile = &task.ResultReconcile{OperationID: "extract#2", IdempotencyKey: "order-42",
			Status: task.StatusCompleted, ReconciledBy: task.ReconciledByVerify,
			Diagnostics: map[string]string{"verifyState": "completed-with-result"}}
		return r
	}
	wantReconciled := task.Result{SchemaVersion: 1, Kind: task.Completed, RunID: goldenRun, StepID: "extract",
		LogicalAttemptID: "2", EngineAttemptID: "3", WorkerID: "worker-1", EmittedAt: goldenT0,
		IdempotencyKey: events.IdempotencyKey(goldenRun, "extract", "2", events.StepCompleted, "v3"),
		Output:         json.RawMessage(`{"receipt":"r-1"}`),
		Reconcile: &task.ResultReconcile{OperationID: "extract#2", IdempotencyKey: "order-42", Status: "completed",
			ReconciledBy: "verify", Diagnostics: map[string]string{"verifyState": "completed-with-result"}}}
	request := task.ReconcileRequest{SchemaVersion: 1, RunID: goldenRun, ActivityName: "charge",
		OperationID: "pay#2", IdempotencyKey: "order-42"}
	signedRequest := request
	signedRequest.Token = goldenToken
	found := task.ReconcileReply{SchemaVersion: 1, Record: new(goldenRecord()), Prior: new(goldenFailedRecord())}
	refused := task.ReconcileReply{SchemaVersion: 1, Error: "database unreachable"}
	started := task.ReconcileReply{SchemaVersion: 1, Started: &task.ReconcileStarted{StepID: "pay",
		LogicalAttemptID: "2", EngineAttemptID: "1", WorkerID: "worker-1", StartedAt: goldenT0}}
	return []goldentest.Record{
		messageOf("Task_keyed_v1", keyed, wantKeyed),
		messageOf("Result_completed_reconciled_v1", reconciled, wantReconciled),
		messageOf("ReconcileRecord_completed_v1", goldenRecord, goldenRecord()),
		messageOf("ReconcileRecord_indeterminate_v1", goldenFailedRecord, goldenFailedRecord()),
		messageOf("ReconcileRequest_v1", func() task.ReconcileRequest { return request }, request),
		messageOf("ReconcileRequest_signed_v1", func() task.ReconcileRequest { return signedRequest }, signedRequest),
		messageOf("ReconcileReply_found_v1", func() task.ReconcileReply { return found }, found),
		messageOf("ReconcileReply_none_v1", func() task.ReconcileReply { return task.ReconcileReply{SchemaVersion: 1} },
			task.ReconcileReply{SchemaVersion: 1}),
		messageOf("ReconcileReply_error_v1", func() task.ReconcileReply { return refused }, refused),
		messageOf("ReconcileReply_started_v1", func() task.ReconcileReply { return started }, started),
	}
}

// A keyed task read by a worker that predates reconciliation is a v1 task
// with its own idempotency key: the fields it does not know are ignored.
func TestKeyedTaskReadsAsV1(t *testing.T) {
	t.Parallel()
	golden, err := os.ReadFile(filepath.Join("testdata", "persisted", "Task_keyed_v1.json"))
	require.NoError(t, err)
	var old struct {
		SchemaVersion  int    `json:"schemaVersion"`
		IdempotencyKey string `json:"idempotencyKey"`
	}
	require.NoError(t, json.Unmarshal(golden, &old))
	require.Equal(t, 1, old.SchemaVersion)
	require.Equal(t, "order-42", old.IdempotencyKey)
}

func TestOperationID(t *testing.T) {
	t.Parallel()
	require.Equal(t, "load#orders#12", task.OperationID("load#orders", "12"))
	step, attempt, ok := task.StepOfOperation("load#orders#12")
	require.True(t, ok)
	require.Equal(t, "load#orders", step, "the step id is everything before the last '#'")
	require.Equal(t, "12", attempt)
	_, _, ok = task.StepOfOperation("no-hash")
	require.False(t, ok)
	require.NotEqual(t, task.OperationID("a", "1"), task.OperationID("a", "2"))
	for _, s := range []task.ReconcileStatus{task.StatusCompleted, task.StatusFailed, task.StatusCancelled,
		task.StatusTimedOut, task.StatusIndeterminate} {
		require.True(t, s.Known(), s)
	}
	require.False(t, task.ReconcileStatus("done").Known())
}
