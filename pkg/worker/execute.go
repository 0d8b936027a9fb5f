package worker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
	"unicode/utf8"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/task"
)

// maxMessageBytes bounds a failure message; longer ones are cut.
const maxMessageBytes = 2 << 10

// errTimeout is the cause of an activity context ended by its deadline.
var errTimeout = errors.New("worker: attempt deadline")

// panicError is a recovered panic of an activity.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("activity panicked: %v", p.value) }

// attemptRun is one delivery of a task being run: what execute works out
// before the activity runs.
type attemptRun struct {
	t       task.Task
	attempt string // the engineAttemptId
	act     *activity
	in      Input
	// scope is the reconciliation scope of a keyed attempt, nil otherwise.
	scope *task.ResultReconcile
	// begun: the bus already held the keyed attempt's StepStarted, so an
	// earlier delivery, on any worker, may have run the activity
	// (startKeyed).
	begun   bool
	limit   time.Duration
	secrets *secretSet
	log     *slog.Logger
	// began is when this delivery began, every result's StartedAt.
	began time.Time
}

// stamp returns r, a result of run, with the time run began.
func (run *attemptRun) stamp(r task.Result) task.Result {
	r.StartedAt = run.began
	return r
}

// execute runs the activity for d's task and returns the final result.
// It returns an execution that is not finished when ctx ended (a hard
// stop): the attempt is abandoned, with no result, for another delivery to
// run. An unkeyed attempt reports StepStarted once it has run for
// Config.StartedAfter (reportStarted), always before the final result. A
// keyed attempt (mem not nil) whose earlier delivery in this process left
// a final result unacked reports that result again without running; any
// other keyed attempt stores its StepStarted before anything runs, and is
// deferred when it cannot (startKeyed); one that may have run before is
// reconciled before the activity runs again (reconcile.go), its record
// looked up before its own StepStarted is stored (lookupFirst).
func (w *Worker) execute(ctx context.Context, d delivery, act *activity, mem *keyedEntry, log *slog.Logger) execution {
	t, attempt := d.t, d.attempt
	if r, ok := mem.remembered(); ok {
		log.InfoContext(ctx, "worker: reporting the unacked outcome of an earlier delivery; the activity does not run",
			"earlier_engine_attempt_id", r.EngineAttemptID)
		return execution{result: r, finished: true, by: settledByMemory}
	}
	began := time.Now()
	secrets := newSecretSet(t.TenantID, t.Secrets, w.providers)
	in, bad := act.input(t, attempt, secrets)
	in = w.withHeartbeats(ctx, in, log)
	run := &attemptRun{t: t, attempt: attempt, act: act, in: in, scope: act.scope(t, in, bad == nil),
		limit: act.deadline(t), secrets: secrets, log: log, began: began}
	var early *lookupAnswer
	if run.scope == nil {
		defer w.reportStartedAfter(ctx, run)()
	} else {
		early = w.lookupFirst(ctx, d, mem, run)
		if x, ok := w.beginKeyed(ctx, run); !ok {
			return x
		}
	}
	if bad != nil {
		return execution{result: run.stamp(w.failed(t, attempt, *bad)), finished: true, by: settledByWorker}
	}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer w.running.add(t.RunID, t.StepID, t.LogicalAttemptID, cancel)()
	actx, stop := context.WithTimeoutCause(actx, run.limit, errTimeout)
	defer stop()
	if run.scope != nil && (run.begun || early != nil) {
		r, settled := w.reconcile(actx, run, early)
		if ctx.Err() != nil {
			return execution{}
		}
		if settled {
			return execution{result: run.stamp(r), finished: true, by: reconciledBy(r)}
		}
	}
	r, ok := w.runActivity(ctx, actx, run)
	return execution{result: run.stamp(r), finished: ok, by: settledByActivity}
}

// beginKeyed stores the StepStarted of keyed attempt run (startKeyed) and
// records in run whether an earlier delivery had begun it. When the
// StepStarted is not stored, the activity must not run: ok is false and x
// defers the task, or abandons it on a hard stop.
func (w *Worker) beginKeyed(ctx context.Context, run *attemptRun) (x execution, ok bool) {
	begun, err := w.startKeyed(ctx, run)
	switch {
	case ctx.Err() != nil:
		return execution{}, false
	case err != nil:
		run.log.WarnContext(ctx, "worker: StepStarted of a keyed attempt not stored; the activity does not run and the task is given back",
			"err", err)
		return execution{deferred: true, by: settledByWorker}, false
	}
	if begun {
		run.log.InfoContext(ctx, "worker: an earlier delivery stored this keyed attempt's StepStarted; reconciling")
	}
	run.begun = begun
	return execution{}, true
}

// runActivity calls the activity and returns its final result, which
// carries the reconciliation status of a keyed attempt; false on a hard
// stop.
func (w *Worker) runActivity(ctx, actx context.Context, run *attemptRun) (task.Result, bool) {
	t, attempt := run.t, run.attempt
	out, err := call(actx, run.act.fn, run.in)
	if ctx.Err() != nil {
		return task.Result{}, false
	}
	var p *panicError
	if errors.As(err, &p) {
		run.log.ErrorContext(ctx, "worker: activity panicked", "panic", run.secrets.redact(fmt.Sprint(p.value)), "stack", string(p.stack))
	}
	if err != nil {
		e, status := failure(actx, err, run.limit, run.secrets)
		return withStatus(w.failed(t, attempt, e), run.scope, status), true
	}
	if bad := checkOutput(&out, w.cfg.MaxOutputBytes, run.secrets); bad != nil {
		// The activity returned: its side effect is done, its result refused.
		return withStatus(w.failed(t, attempt, *bad), run.scope, task.StatusCompleted), true
	}
	r := task.NewResult(t, task.Completed, attempt, w.cfg.WorkerID)
	r.Output, r.Artifacts = out.JSON, out.Artifacts
	return withStatus(r, run.scope, task.StatusCompleted), true
}

// call runs fn, turning a panic into a *panicError.
func call(ctx context.Context, fn ActivityFunc, in Input) (out Output, err error) {
	defer func() {
		if v := recover(); v != nil {
			out, err = Output{}, &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return fn(ctx, in)
}

// failed returns the StepFailed result of t's attempt.
func (w *Worker) failed(t task.Task, attempt string, e events.StepError) task.Result {
	r := task.NewResult(t, task.Failed, attempt, w.cfg.WorkerID)
	r.Error = &e
	return r
}

// failure maps an activity's error to the StepError it reports and to the
// reconciliation record status of a keyed attempt. When the activity's
// context ended, its cause (a cancel notice, the deadline) wins over what
// the activity returned. A panic may have come after the side effect, as
// may an *Error with AfterSideEffect: both are indeterminate. The message
// is redacted and truncated.
func failure(actx context.Context, err error, limit time.Duration, secrets *secretSet) (events.StepError, task.ReconcileStatus) {
	var (
		e      events.StepError
		status = task.StatusFailed
		p      *panicError
		notice *cancelNoticeError
		typed  *Error
	)
	cause := context.Cause(actx)
	switch {
	case errors.As(err, &p):
		e = events.StepError{Code: CodePanic, Message: p.Error(), Retryable: true, Category: CategoryActivity}
		status = task.StatusIndeterminate
	case actx.Err() != nil && errors.As(cause, &notice):
		e = events.StepError{Code: CodeCancelled, Message: notice.Error(), Category: CategoryCancelled}
		status = task.StatusCancelled
	case actx.Err() != nil && errors.Is(cause, errTimeout):
		e = events.StepError{Code: CodeTimeout, Retryable: true, Category: CategoryTimeout,
			Message: fmt.Sprintf("the activity did not finish within %v", limit)}
		status = task.StatusTimedOut
	case errors.As(err, &typed):
		e = events.StepError{Code: typed.Code, Message: typed.Message, Retryable: typed.Retryable, Category: typed.Category}
		e.Code = cmp.Or(e.Code, CodeActivityError)
		e.Category = cmp.Or(e.Category, CategoryActivity)
		if typed.AfterSideEffect {
			status = task.StatusIndeterminate
		}
	default:
		e = events.StepError{Code: CodeActivityError, Message: err.Error(), Retryable: true, Category: CategoryActivity}
	}
	e.Message = truncate(secrets.redact(e.Message))
	return e, status
}

// checkOutput compacts out.JSON in place and returns the StepError of an
// output the worker must not publish: invalid, too large, or carrying a
// secret value.
func checkOutput(out *Output, maxBytes int, secrets *secretSet) *events.StepError {
	refuse := func(code, format string, args ...any) *events.StepError {
		return &events.StepError{Code: code, Message: fmt.Sprintf(format, args...), Category: CategoryWorker}
	}
	if len(out.JSON) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, out.JSON); err != nil {
			return refuse(CodeInvalidOutput, "the output is not valid JSON: %v", err)
		}
		out.JSON = buf.Bytes()
	}
	var arts []byte
	if len(out.Artifacts) > 0 {
		for i, a := range out.Artifacts {
			if a.URI == "" || a.Kind == "" {
				return refuse(CodeInvalidOutput, "artifact %d lacks its uri or kind", i)
			}
		}
		arts, _ = json.Marshal(out.Artifacts) // ArtifactRef always encodes
	}
	if n := len(out.JSON) + len(arts); n > maxBytes {
		return refuse(CodeOutputTooLarge, "the output and artifact list are %d bytes of JSON, more than the limit of %d; store large results as artifacts", n, maxBytes)
	}
	if secrets.leaks(out.JSON) || secrets.leaks(arts) {
		return refuse(CodeSecretInOutput, "the output contains the value of a secret the activity resolved")
	}
	return nil
}

// deadline is how long an attempt of t may run: the task's timeout, capped
// by WithTimeout; plan.DefaultTimeout when neither is set.
func (a *activity) deadline(t task.Task) time.Duration {
	d := t.Timeout()
	if d <= 0 {
		d = cmp.Or(a.timeout, plan.DefaultTimeout)
	}
	if a.timeout > 0 {
		d = min(d, a.timeout)
	}
	return d
}

// beat is the heartbeat interval of the activity: its own, at most def (a
// third of AckWait).
func (a *activity) beat(def time.Duration) time.Duration {
	if a.heartbeat > 0 {
		return min(a.heartbeat, def)
	}
	return def
}

// input is the activity's Input for t, with its own idempotency key when it
// derives one, or the failure to give when that fails.
func (a *activity) input(t task.Task, attempt string, secrets *secretSet) (Input, *events.StepError) {
	in := newInput(t, attempt, secrets)
	if a.key == nil {
		return in, nil
	}
	key, err := a.key(in)
	if err == nil && key == "" {
		err = errors.New("empty key")
	}
	if err != nil {
		return in, &events.StepError{Code: CodeInvalidIdempotencyKey, Category: CategoryActivity, Retryable: false,
			Message: truncate(secrets.redact("deriving the idempotency key: " + err.Error()))}
	}
	in.IdempotencyKey = key
	return in, nil
}

func newInput(t task.Task, attempt string, secrets *secretSet) Input {
	return Input{
		JSON: t.Input, IdempotencyKey: t.IdempotencyKey,
		RunID: t.RunID, TenantID: t.TenantID, StepID: t.StepID, PlanVersion: t.PlanVersion,
		LogicalAttemptID: t.LogicalAttemptID, EngineAttemptID: attempt, FencingToken: fencingToken(t),
		Activity: t.Activity, Queue: t.Queue, ScheduledAt: t.ScheduledAt,
		secrets: secrets,
	}
}

// truncate cuts s to at most maxMessageBytes on a rune boundary, marking
// the cut.
func truncate(s string) string {
	const n = maxMessageBytes
	if len(s) <= n {
		return s
	}
	const mark = "…(truncated)"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
