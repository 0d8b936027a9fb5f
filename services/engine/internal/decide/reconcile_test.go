package decide

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/task"
)

// keyed returns activity step id with the plan idempotency key key.
func keyed(id, key string, deps ...string) plan.Step {
	s := act(id, deps...)
	s.IdempotencyKey = key
	return s
}

// report is a worker's reconciliation report for step "a", attempt n.
func report(n int, key string, status task.ReconcileStatus, by string) *task.ResultReconcile {
	return &task.ResultReconcile{OperationID: task.OperationID("a", attemptID(n)), IdempotencyKey: key, Status: status, ReconciledBy: by}
}

// scheduledAt is when the bundle's log scheduled step id's attempt n.
func (b *bundle) scheduledAt(id string, n int) time.Time {
	b.t.Helper()
	for _, e := range b.log {
		if e.EventType == events.StepScheduled && e.StepID == id && e.LogicalAttemptID == attemptID(n) {
			return e.EmittedAt
		}
	}
	b.t.Fatalf("step %s attempt %d was not scheduled", id, n)
	return time.Time{}
}

// A keyed attempt that completes gets a completed record with its result,
// created at its StepScheduled and updated at the round's time; the
// StepCompleted of a result the verifier reconstructed says so.
func TestReconcileCompletedRecord(t *testing.T) {
	t.Parallel()
	b := setup(t, keyed("a", "order-42"))
	b.decide(approve())
	b.now = b.now.Add(time.Minute)
	b.decide(start("a", 1))
	in := done("a", 1).(ResultCompleted)
	in.Reconcile = report(1, "order-42", task.StatusCompleted, task.ReconciledByVerify)
	in.Artifacts = []events.ArtifactRef{{URI: "s3://b/k", Kind: "receipt"}}
	d := b.decide(in)
	require.Equal(t, []string{"StepCompleted a 1", "RunCompleted"}, descs(d.Events))
	require.Equal(t, stepCompletedData{StepCompletedData: events.StepCompletedData{Output: in.Output, Artifacts: in.Artifacts},
		ReconciledBy: task.ReconciledByVerify}, d.Events[0].Data)
	require.Equal(t, []task.ReconcileRecord{{
		Version: 1, RunID: testRun, ActivityName: "echo", OperationID: "a#1", IdempotencyKey: "order-42",
		StepID: "a", LogicalAttemptID: "1", Status: task.StatusCompleted,
		Result:       &task.ReconcileResult{Output: in.Output, Artifacts: in.Artifacts},
		ReconciledBy: task.ReconciledByVerify, CreatedAt: b.scheduledAt("a", 1), UpdatedAt: b.now,
	}}, d.Reconciliations)

	// The duplicate decides nothing, and so writes no record.
	require.Empty(t, b.decide(in).Reconciliations)
}

// An unkeyed attempt gets no record, whatever its outcome: dispatch stays
// at-least-once.
func TestReconcileUnkeyedHasNoRecord(t *testing.T) {
	t.Parallel()
	b := setup(t, withRetry(act("a"), 2, time.Second), act("b"))
	b.decide(approve())
	require.Empty(t, b.decide(fail("a", 1, true)).Reconciliations)
	require.Empty(t, b.decide(fire("a", 2, TimerRetry)).Reconciliations)
	require.Empty(t, b.decide(done("a", 2)).Reconciliations)
	require.Empty(t, b.decide(done("b", 1)).Reconciliations)
}

// A failed attempt's record takes the status the worker reported (failed
// when none, indeterminate when unknown), on a retry as on a final
// failure; the key the worker reported wins over the plan's.
func TestReconcileFailureRecords(t *testing.T) {
	t.Parallel()
	b := setup(t, withRetry(keyed("a", "plan-key"), 4, 0))
	b.decide(approve())
	for n, c := range []struct {
		rep  *task.ResultReconcile
		key  string
		want task.ReconcileStatus
	}{
		{rep: nil, key: "plan-key", want: task.StatusFailed},
		{rep: report(2, "worker-key", task.StatusTimedOut, ""), key: "worker-key", want: task.StatusTimedOut},
		{rep: report(3, "worker-key", "exploded", ""), key: "worker-key", want: task.StatusIndeterminate},
		{rep: report(4, "worker-key", task.StatusIndeterminate, ""), key: "worker-key", want: task.StatusIndeterminate},
	} {
		attempt := n + 1
		in := fail("a", attempt, true).(ResultFailed)
		in.Reconcile = c.rep
		d := b.decide(in)
		require.Len(t, d.Reconciliations, 1, "attempt %d", attempt)
		rec := d.Reconciliations[0]
		require.Equal(t, c.want, rec.Status, "attempt %d", attempt)
		require.Equal(t, c.key, rec.IdempotencyKey)
		require.Equal(t, task.OperationID("a", attemptID(attempt)), rec.OperationID)
		require.Equal(t, &in.Error, rec.Error)
		require.Nil(t, rec.Result)
	}
	require.Equal(t, events.RunStatusFailed, b.s.Status, "the fourth failure exhausted the policy")
}

// Output that is not JSON fails the attempt; the record says the side
// effect completed without a usable result.
func TestReconcileInvalidOutputRecord(t *testing.T) {
	t.Parallel()
	b := setup(t, keyed("a", "k"))
	b.decide(approve())
	in := done("a", 1).(ResultCompleted)
	in.Output = json.RawMessage(`{`)
	d := b.decide(in)
	require.Len(t, d.Reconciliations, 1)
	require.Equal(t, task.StatusCompleted, d.Reconciliations[0].Status)
	require.Nil(t, d.Reconciliations[0].Result)
	require.Equal(t, CodeInvalidOutput, d.Reconciliations[0].Error.Code)
}

// A cancelled run records its keyed attempts in flight as cancelled: under
// the plan's key, or under the key the worker reported in StepStarted
// (folded from the log); unkeyed and finished attempts get none.
func TestReconcileCancelRecords(t *testing.T) {
	t.Parallel()
	b := setup(t, keyed("a", "plan-key"), act("b"), act("c"), keyed("d", "done-key"))
	b.decide(approve())
	started := start("b", 1).(ResultStarted)
	started.ActivityKey = "derived-key"
	d := b.decide(started)
	require.Equal(t, stepStartedData{StepStartedData: events.StepStartedData{WorkerID: "w1"}, ActivityKey: "derived-key"}, d.Events[0].Data)
	require.Equal(t, "derived-key", b.s.Steps["b"].ActivityKey, "the fold keeps the key")
	b.decide(done("d", 1))

	// The fold of the log, not only Decide's working state, knows the key.
	folded, err := Fold(b.p, b.log)
	require.NoError(t, err)
	require.Equal(t, "derived-key", folded.Steps["b"].ActivityKey)

	d = b.decide(sig(1, plan.SignalCancel, ""))
	require.ElementsMatch(t, []string{"a/1", "b/1", "c/1"}, cancelIDs(d))
	keys := map[string]string{}
	for _, r := range d.Reconciliations {
		require.Equal(t, task.StatusCancelled, r.Status)
		require.Equal(t, CodeCancelled, r.Error.Code)
		keys[r.StepID] = r.IdempotencyKey
	}
	require.Equal(t, map[string]string{"a": "plan-key", "b": "derived-key"}, keys)
}

// A failure whose side effect completed (status completed, no result) is
// never retried, whatever the worker said about retrying it.
func TestReconcileCompletedFailureIsFinal(t *testing.T) {
	t.Parallel()
	b := setup(t, withRetry(keyed("a", "k"), 3, 0))
	b.decide(approve())
	in := fail("a", 1, true).(ResultFailed)
	in.Reconcile = report(1, "k", task.StatusCompleted, "")
	d := b.decide(in)
	require.Equal(t, []string{"StepStarted a 1", "StepFailed a 1", "RunFailed 1"}, descs(d.Events))
	require.Equal(t, stepStartedData{ActivityKey: "k"}, d.Events[0].Data, "StepStarted carries the result's activity key")
	require.False(t, d.Reconciliations[0].Error.Retryable)
	require.Empty(t, d.Tasks, "no retry")
}
