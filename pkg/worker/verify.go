package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/task"
)

// VerifyState is what a verify hook reports about the side effect of an
// attempt that may have run before. It is a state, never a boolean: "not
// sure" is an answer of its own (docs/reconciliation.md).
type VerifyState string

// The verify states.
const (
	// VerifyNotCompleted: the external system has no completed side effect
	// for the idempotency key. The worker runs the activity.
	VerifyNotCompleted VerifyState = "not-completed"
	// VerifyCompletedWithResult: the side effect completed and
	// Verification.Result is its result. The worker reports the step
	// completed with it, marked as reconciled by verify, and does not run
	// the activity.
	VerifyCompletedWithResult VerifyState = "completed-with-result"
	// VerifyCompletedResultUnavailable: the side effect completed but its
	// result cannot be reconstructed. The step fails with
	// CodeReconciliationResultUnavailable, not retryable.
	VerifyCompletedResultUnavailable VerifyState = "completed-result-unavailable"
	// VerifyIndeterminate: the verifier cannot tell whether the side effect
	// completed. The attempt fails with CodeReconciliationIndeterminate,
	// retryable: the step's retry policy bounds it and the next attempt
	// verifies again. The activity is never silently run again.
	VerifyIndeterminate VerifyState = "indeterminate"
)

// Verification is a verify hook's answer.
type Verification struct {
	// State is one of the four VerifyStates; anything else is a
	// contradiction and fails the step closed.
	State VerifyState
	// Result is the activity's result, required with
	// VerifyCompletedWithResult (it then goes through the same checks as an
	// activity's output) and forbidden with every other state: either
	// mistake is a contradiction.
	Result *Output
	// Detail says, for people, what the verifier found; it goes into the
	// failure message and the record's diagnostics, redacted of the secret
	// values the attempt resolved. Optional.
	Detail string
}

// VerifyFunc asks the external system whether the side effect of the
// attempt described by in (its IdempotencyKey, FencingToken, RunID, StepID
// and input) completed. ctx ends at the attempt's deadline or on a cancel
// notice. An error means the verifier is unavailable: the attempt fails as
// VerifyIndeterminate does. A panic is recovered as an error.
type VerifyFunc func(ctx context.Context, in Input) (Verification, error)

// WithVerify registers the activity's verify hook. The worker calls it
// only for a keyed attempt (the plan step has an idempotencyKey, or the
// activity derives one with WithIdempotencyKey) that may have run before:
// a redelivery, an engine re-send, or a retry (any logical attempt but the
// first), and only when the engine holds no durable record for the
// attempt's operation. A keyed activity without a verify hook is run
// again; its idempotency key is then the external system's only
// protection against a repeated side effect.
func WithVerify(fn VerifyFunc) ActivityOption {
	return func(a *activity) error {
		if fn == nil {
			return fmt.Errorf("%w: nil verify function", ErrInvalidConfig)
		}
		a.verify = fn
		return nil
	}
}

// Reconciliation error codes, as the step's error reports them (category
// CategoryReconciliation); see the task package for their contracts.
const (
	CodeReconciliationResultUnavailable = task.CodeReconciliationResultUnavailable
	CodeReconciliationIndeterminate     = task.CodeReconciliationIndeterminate
	CodeReconciliationContradiction     = task.CodeReconciliationContradiction
	CategoryReconciliation              = task.CategoryReconciliation
)

// callVerify runs fn, turning a panic into an error.
func callVerify(ctx context.Context, fn VerifyFunc, in Input) (v Verification, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = Verification{}, fmt.Errorf("the verifier panicked: %v", p)
		}
	}()
	return fn(ctx, in)
}

// fromVerify acts on the verify hook's answer, per the verify-state table
// of docs/reconciliation.md. settled is false only when the activity must
// run: not-completed, with nothing contradicting it.
func (w *Worker) fromVerify(actx context.Context, run *attemptRun, v Verification, err error, prior *task.ReconcileRecord) (task.Result, bool) {
	diag := map[string]string{"verifyState": string(v.State)}
	if v.Detail != "" {
		diag["verifyDetail"] = v.Detail
	}
	if err != nil {
		return w.verifyFailed(actx, run, err), true
	}
	if why := contradiction(v, prior); why != "" {
		diag["contradiction"] = why
		if prior != nil {
			diag["priorOperationId"], diag["priorStatus"] = prior.OperationID, string(prior.Status)
		}
		run.log.ErrorContext(actx, "worker: reconciliation failed closed", "verify_state", string(v.State), "contradiction", why)
		return w.reconcileFailed(run, task.StatusIndeterminate, events.StepError{Code: CodeReconciliationContradiction,
			Message: "reconciliation failed closed: " + why}, diag), true
	}
	detail := ""
	if v.Detail != "" {
		detail = ": " + v.Detail
	}
	switch v.State {
	case VerifyNotCompleted:
		return task.Result{}, false
	case VerifyCompletedWithResult:
		return w.verifiedCompleted(run, *v.Result, diag), true
	case VerifyCompletedResultUnavailable:
		return w.reconcileFailed(run, task.StatusCompleted, events.StepError{Code: CodeReconciliationResultUnavailable,
			Message: "the verifier reports the side effect completed, but its result cannot be reconstructed" + detail}, diag), true
	default: // VerifyIndeterminate; contradiction refused every other state
		return w.reconcileFailed(run, task.StatusIndeterminate, events.StepError{Code: CodeReconciliationIndeterminate,
			Retryable: true, Message: "the verifier cannot tell whether the side effect completed" + detail}, diag), true
	}
}

// contradiction returns why v cannot be acted on, or "": an unknown state,
// a result missing from completed-with-result or present with any other
// state, or not-completed while the durable record of another operation
// with the same key (prior) is completed.
func contradiction(v Verification, prior *task.ReconcileRecord) string {
	switch v.State {
	case VerifyCompletedWithResult:
		if v.Result == nil {
			return "the verifier reported completed-with-result without a result"
		}
		return ""
	case VerifyNotCompleted, VerifyCompletedResultUnavailable, VerifyIndeterminate:
		if v.Result != nil {
			return fmt.Sprintf("the verifier reported %s with a result", v.State)
		}
		if v.State == VerifyNotCompleted && prior != nil && prior.Status == task.StatusCompleted {
			return fmt.Sprintf("the verifier reported not-completed, but the durable record of operation %s with the same idempotency key is completed",
				prior.OperationID)
		}
		return ""
	default:
		return fmt.Sprintf("the verifier reported the unknown state %q", v.State)
	}
}

// verifyFailed is the result of a verify hook that returned an error (or
// panicked): the verifier is unavailable, so the attempt fails as
// indeterminate, retryable, unless a cancel notice stopped it.
func (w *Worker) verifyFailed(actx context.Context, run *attemptRun, err error) task.Result {
	var notice *cancelNoticeError
	if actx.Err() != nil && errors.As(context.Cause(actx), &notice) {
		e, _ := failure(actx, err, run.limit, run.secrets)
		return withStatus(w.failed(run.t, run.attempt, e), run.scope, task.StatusCancelled)
	}
	return w.reconcileFailed(run, task.StatusIndeterminate, events.StepError{Code: CodeReconciliationIndeterminate, Retryable: true,
		Message: "the verifier is unavailable, so whether the side effect completed is unknown: " + err.Error()},
		map[string]string{"verifyError": err.Error()})
}

// verifiedCompleted is the completed result the verifier reconstructed,
// after the checks an activity's output gets; an output they refuse fails
// the step (the side effect did complete).
func (w *Worker) verifiedCompleted(run *attemptRun, out Output, diag map[string]string) task.Result {
	if bad := checkOutput(&out, w.cfg.MaxOutputBytes, run.secrets); bad != nil {
		return w.reconcileFailed(run, task.StatusCompleted, *bad, diag)
	}
	r := task.NewResult(run.t, task.Completed, run.attempt, w.cfg.WorkerID)
	r.Output, r.Artifacts = out.JSON, out.Artifacts
	r = withStatus(r, run.scope, task.StatusCompleted)
	r.Reconcile.ReconciledBy = task.ReconciledByVerify
	return r
}
