package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
)

// This file reconciles keyed attempts (docs/reconciliation.md). An attempt
// is keyed when the plan step has an idempotencyKey (the task carries an
// operationId) or the activity derives its key from the input
// (WithIdempotencyKey). Before a keyed attempt that may have run before is
// run again, the worker asks the engine for the operation's durable record
// and reports it if there is one; otherwise it asks the activity's verify
// hook, and runs the activity only when the hook reports not-completed, or
// when there is no hook and no earlier delivery stored the attempt's
// StepStarted (withoutVerify).

// scope returns the reconciliation scope of the attempt, or nil when it is
// unkeyed. derived reports that the activity's own key, if it has a key
// function, was derived (it failed otherwise, and the task's key stands).
func (a *activity) scope(t task.Task, in Input, derived bool) *task.ResultReconcile {
	if t.OperationID == "" && (a.key == nil || !derived) {
		return nil
	}
	op := t.OperationID
	if op == "" {
		op = task.OperationID(t.StepID, t.LogicalAttemptID)
	}
	return &task.ResultReconcile{OperationID: op, IdempotencyKey: in.IdempotencyKey}
}

// mayHaveRun reports whether the delivery may follow an earlier run of the
// same operation's side effect, besides a StepStarted an earlier delivery
// stored (attemptRun.begun): anything but the first delivery of the
// first logical attempt, including an engine re-send (whose delivery count
// starts again at 1); and a first delivery whose count of 1 cannot be
// trusted: an attempt this process began before (mem), or a task stored
// before the delivery epoch (keyed.go).
func (w *Worker) mayHaveRun(d delivery, mem *keyedEntry) bool {
	t := d.t
	return t.Resend || d.attempt != "1" || t.LogicalAttemptID != "1" ||
		mem.mayHaveRun() || w.epoch.predates(d.stored, time.Now())
}

// fencingToken is the task's fencing token; for a task from an engine that
// predates it, the logical attempt, which is what the engine sends.
func fencingToken(t task.Task) uint64 {
	if t.FencingToken > 0 {
		return t.FencingToken
	}
	n, _ := strconv.ParseUint(t.LogicalAttemptID, 10, 64)
	return n
}

// withStatus sets the reconciliation report of a keyed attempt's final
// result (scope not nil) to status; an unkeyed result is left as it is.
func withStatus(r task.Result, scope *task.ResultReconcile, status task.ReconcileStatus) task.Result {
	if scope == nil {
		return r
	}
	rep := *scope
	rep.Status = status
	r.Reconcile = &rep
	return r
}

// lookupAnswer is the engine's reply to a lookup, or why there is none.
type lookupAnswer struct {
	reply task.ReconcileReply
	err   error
}

// lookupFirst looks up the record of keyed attempt run when its delivery
// may follow an earlier run (mayHaveRun), before the worker stores its own
// StepStarted: so a StepStarted the engine's answer names
// (ReconcileReply.Started) is an earlier or another delivery's, never this
// one's. It returns nil, and looks nothing up, for a delivery that cannot
// have run before; reconcile looks up then if the StepStarted's PubAck
// says an earlier delivery began the attempt.
func (w *Worker) lookupFirst(ctx context.Context, d delivery, mem *keyedEntry, run *attemptRun) *lookupAnswer {
	if !w.mayHaveRun(d, mem) {
		return nil
	}
	reply, err := w.lookup(ctx, run)
	return &lookupAnswer{reply: reply, err: err}
}

// reconcile settles a keyed attempt that may have run before without
// running the activity, when it can: with the engine's durable record of
// the operation if there is one, else with the verify hook's answer.
// settled is false when the activity must run: no record, no StepStarted
// of another delivery (run.begun, ReconcileReply.Started), and no hook or
// a hook that reports not-completed. A lookup that fails is never taken
// for "no record": the attempt fails, retryable, as indeterminate. early
// is lookupFirst's answer; when nil, reconcile looks up now.
func (w *Worker) reconcile(actx context.Context, run *attemptRun, early *lookupAnswer) (r task.Result, settled bool) {
	if early == nil {
		reply, err := w.lookup(actx, run)
		early = &lookupAnswer{reply: reply, err: err}
	}
	reply, err := early.reply, early.err
	if err != nil {
		run.log.WarnContext(actx, "worker: reconciliation lookup failed", "err", err)
		return w.reconcileFailed(run, task.StatusIndeterminate, events.StepError{
			Code: CodeReconciliationIndeterminate, Retryable: true,
			Message: "the engine's reconciliation record could not be read, so whether the activity ran before is unknown: " + err.Error(),
		}, map[string]string{"lookup": "unavailable"}), true
	}
	if reply.Record != nil {
		run.log.InfoContext(actx, "worker: reporting the engine's reconciliation record; the activity does not run",
			"status", reply.Record.Status)
		return w.fromRecord(run, *reply.Record), true
	}
	if reply.Started != nil && !run.begun {
		run.log.InfoContext(actx, "worker: the engine's log holds this keyed attempt's StepStarted and no outcome; it may have run",
			"started_by", reply.Started.WorkerID, "started_engine_attempt_id", reply.Started.EngineAttemptID,
			"started_at", reply.Started.StartedAt)
		run.begun = true
	}
	if run.act.verify == nil {
		return w.withoutVerify(actx, run)
	}
	v, err := callVerify(actx, run.act.verify, run.in)
	return w.fromVerify(actx, run, v, err, reply.Prior)
}

// withoutVerify settles, or lets run, a keyed attempt that may have run
// before, has no record and no verify hook. When the bus (a duplicate
// PubAck) or the engine's log (ReconcileReply.Started) holds an earlier
// delivery's StepStarted (run.begun), that delivery may have run the
// activity and nothing says it did not: the attempt fails, retryable, as
// indeterminate, and the activity does not run again. Otherwise no
// delivery is known to have stored a StepStarted, and the activity runs
// again, its key the external system's only protection.
func (w *Worker) withoutVerify(ctx context.Context, run *attemptRun) (task.Result, bool) {
	if !run.begun {
		run.log.InfoContext(ctx, "worker: no reconciliation record and no verify hook; the activity runs again")
		return task.Result{}, false
	}
	run.log.WarnContext(ctx, "worker: a keyed attempt an earlier delivery began has no record and no verify hook; it fails as indeterminate and the activity does not run again")
	return w.reconcileFailed(run, task.StatusIndeterminate, events.StepError{
		Code: CodeReconciliationIndeterminate, Retryable: true,
		Message: "an earlier delivery of this attempt began it (its StepStarted is stored) and may have run the activity; " +
			"the engine holds no outcome of it and the activity has no verify hook, so the activity does not run again",
	}, map[string]string{"started": "earlier delivery", "verify": "none"}), true
}

// lookup asks the engine for the operation's record (task.ReconcileRequest
// on streams.ReconcileSubject), waiting at most PublishTimeout. An answer
// the engine could not give is an error. The request carries the task's
// token, without which the engine answers nothing.
func (w *Worker) lookup(ctx context.Context, run *attemptRun) (task.ReconcileReply, error) {
	var reply task.ReconcileReply
	req, err := json.Marshal(task.ReconcileRequest{SchemaVersion: task.SchemaVersion, RunID: run.t.RunID,
		ActivityName: run.t.Activity, OperationID: run.scope.OperationID, IdempotencyKey: run.scope.IdempotencyKey,
		Token: run.t.Token})
	if err != nil {
		return reply, err
	}
	lctx, cancel := context.WithTimeout(ctx, w.cfg.PublishTimeout)
	defer cancel()
	msg, err := w.js.Conn().RequestWithContext(lctx, streams.ReconcileSubject, req)
	if err != nil {
		return reply, fmt.Errorf("request on %s: %w", streams.ReconcileSubject, err)
	}
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return reply, fmt.Errorf("the engine's reply is not a ReconcileReply: %w", err)
	}
	if reply.Error != "" {
		return reply, fmt.Errorf("the engine could not answer: %s", reply.Error)
	}
	return reply, nil
}

// fromRecord reports the engine's durable record as the attempt's result:
// completed with its result, or failed with its error.
func (w *Worker) fromRecord(run *attemptRun, rec task.ReconcileRecord) task.Result {
	rep := *run.scope
	rep.Status, rep.ReconciledBy = rec.Status, task.ReconciledByRecord
	if rec.Status == task.StatusCompleted && rec.Result != nil {
		r := task.NewResult(run.t, task.Completed, run.attempt, w.cfg.WorkerID)
		r.Output, r.Artifacts, r.Reconcile = rec.Result.Output, rec.Result.Artifacts, &rep
		return r
	}
	e := events.StepError{Code: CodeReconciliationResultUnavailable, Category: CategoryReconciliation,
		Message: fmt.Sprintf("the reconciliation record of operation %s is %s without a result or an error", rec.OperationID, rec.Status)}
	if rec.Error != nil {
		e = *rec.Error
	}
	r := w.failed(run.t, run.attempt, e)
	r.Reconcile = &rep
	return r
}

// reconcileFailed is the failed result of a reconciliation that ended the
// attempt, with the record status and diagnostics it asks for. The message
// is redacted and truncated.
func (w *Worker) reconcileFailed(run *attemptRun, status task.ReconcileStatus, e events.StepError, diagnostics map[string]string) task.Result {
	if e.Category == "" {
		e.Category = CategoryReconciliation
	}
	e.Message = truncate(run.secrets.redact(e.Message))
	for k, v := range diagnostics {
		diagnostics[k] = truncate(run.secrets.redact(v))
	}
	r := withStatus(w.failed(run.t, run.attempt, e), run.scope, status)
	r.Reconcile.Diagnostics = diagnostics
	return r
}
