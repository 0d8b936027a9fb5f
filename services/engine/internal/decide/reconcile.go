package decide

import (
	"cmp"
	"maps"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/task"
)

// This file decides the reconciliation records of keyed activity attempts
// (docs/reconciliation.md). The decider adds a record to the Decision in
// the round that emits the attempt's terminal event (StepCompleted,
// StepFailed, StepRetryScheduled) or cancels its run; the round writes it
// in the same transaction. An unkeyed attempt gets none and keeps
// at-least-once dispatch.

// reconcileKey is the idempotency key of the record of attempt st of
// activity step ps: the key the worker reported with the result, else the
// one its StepStarted recorded, else the plan step's own; "" for an
// unkeyed attempt, which gets no record.
func reconcileKey(ps *plan.Step, st StepState, reported *task.ResultReconcile) string {
	var key string
	if reported != nil {
		key = reported.IdempotencyKey
	}
	return cmp.Or(key, st.ActivityKey, ps.IdempotencyKey)
}

// reconcile adds the record of attempt st of activity step ps, ending with
// status, to the decision, if the attempt is keyed. rep is what the worker
// reported (nil when it reported nothing); result is set for a completed
// attempt with its result, e for every other outcome.
func (d *decider) reconcile(ps *plan.Step, st StepState, rep *task.ResultReconcile, status task.ReconcileStatus,
	result *task.ReconcileResult, e *events.StepError) {
	key := reconcileKey(ps, st, rep)
	if key == "" {
		return
	}
	attempt := attemptID(st.Attempt)
	rec := task.ReconcileRecord{
		Version: task.RecordVersion, RunID: d.s.RunID, ActivityName: ps.Activity,
		OperationID: task.OperationID(ps.ID, attempt), IdempotencyKey: key,
		StepID: ps.ID, LogicalAttemptID: attempt, Status: status, Result: result, Error: e,
		CreatedAt: st.ScheduledAt, UpdatedAt: d.now,
	}
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = d.now
	}
	if rep != nil {
		rec.ReconciledBy, rec.Diagnostics = rep.ReconciledBy, maps.Clone(rep.Diagnostics)
	}
	d.out.Reconciliations = append(d.out.Reconciliations, rec)
}

// failureStatus is the record status of a failed attempt: the status the
// worker reported, failed when it reported none, and indeterminate for one
// this engine does not know, since a side effect cannot be ruled out.
func failureStatus(rep *task.ResultReconcile) task.ReconcileStatus {
	switch {
	case rep == nil || rep.Status == "":
		return task.StatusFailed
	case rep.Status.Known():
		return rep.Status
	default:
		return task.StatusIndeterminate
	}
}

// reconcileCancelled adds a cancelled record for every keyed activity
// attempt in flight when the run was cancelled (cancels, from
// State.InFlight).
func (d *decider) reconcileCancelled(cancels []Cancel, reason string) {
	for _, c := range cancels {
		ps, ok := d.step(c.StepID)
		if !ok {
			continue
		}
		e := events.StepError{Code: CodeCancelled, Message: reason, Category: "CANCELLED"}
		st, _ := d.s.stepState(c.StepID)
		d.reconcile(ps, st, nil, task.StatusCancelled, nil, &e)
	}
}

// completedData is the StepCompleted payload of a completed result: the
// engine's form, naming how the result was reconciled, only when it was.
func completedData(data events.StepCompletedData, rep *task.ResultReconcile) any {
	if rep == nil || rep.ReconciledBy == "" {
		return data
	}
	return stepCompletedData{StepCompletedData: data, ReconciledBy: rep.ReconciledBy}
}

// startedData is the StepStarted payload of a started result: the engine's
// form, with the activity key, only for a keyed attempt.
func startedData(in ResultStarted) any {
	data := events.StepStartedData{WorkerID: in.WorkerID, StartedAt: in.StartedAt}
	if in.ActivityKey == "" {
		return data
	}
	return stepStartedData{StepStartedData: data, ActivityKey: in.ActivityKey}
}
