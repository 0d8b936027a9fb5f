package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/periodic"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/tracing"
)

// handle runs one delivered task through the protocol (docs/worker-protocol.md,
// "Taking tasks"): decode, drop it if its run's cancel notice covers it
// (dropCancelled), report StepStarted, run, report the outcome and wait
// for its PubAck, and only then ack. It logs the delivery's start and
// end (attemptlog.go). beat is the default heartbeat interval. ctx ends on
// a hard stop, which abandons the task.
func (w *Worker) handle(ctx context.Context, msg jetstream.Msg, beat time.Duration) {
	d, err := decodeTask(msg)
	if err != nil {
		w.terminate(ctx, msg, err)
		return
	}
	t := d.t
	ctx, span := w.startSpan(ctx, msg, t, d.attempt)
	defer span.End()
	log := w.logger.With("run_id", t.RunID, "step_id", t.StepID, "logical_attempt_id", t.LogicalAttemptID,
		"engine_attempt_id", d.attempt, "activity", t.Activity)
	if w.dropCancelled(ctx, msg, t, log) {
		return
	}
	begun := time.Now()
	log.InfoContext(ctx, "worker: attempt started")
	x := w.runTask(ctx, msg, d, beat, log)
	endSpan(span, x.result, x.finished)
	logEnded(ctx, log, x, time.Since(begun))
}

// runTask runs, reports and settles one decoded delivery. A keyed attempt
// holds its turn in keyedMemory meanwhile, so that two deliveries of it
// never run at once in this process, and the memory learns how it ended.
func (w *Worker) runTask(ctx context.Context, msg jetstream.Msg, d delivery, beat time.Duration, log *slog.Logger) execution {
	act, ok := w.activity(d.t.Activity)
	if !ok {
		log.WarnContext(ctx, "worker: no activity of this name is registered")
		r := w.failed(d.t, d.attempt, events.StepError{Code: CodeUnknownActivity, Category: CategoryWorker,
			Message: fmt.Sprintf("no activity %q is registered with worker %s on queue %q; it registers %s",
				d.t.Activity, w.cfg.WorkerID, d.t.Queue, w.registered())})
		r.StartedAt = r.EmittedAt
		x := execution{finished: true, by: settledByWorker, result: r}
		x.published = w.report(ctx, x.result, log)
		x.acked = w.settle(ctx, msg, x.published, log)
		return x
	}
	stopBeat := w.heartbeat(ctx, msg, act.beat(beat), log)
	mem, err := w.takeTurn(ctx, d.t, act)
	if err != nil {
		stopBeat()
		w.giveBack(ctx, msg)
		return execution{}
	}
	x := w.execute(ctx, d, act, mem, log)
	x.published = x.finished && w.report(ctx, x.result, log)
	stopBeat()
	switch {
	case x.finished:
		x.acked = w.settle(ctx, msg, x.published, log)
	case x.deferred:
		w.settle(ctx, msg, false, log) // a nak with RedeliveryDelay
	default:
		log.InfoContext(ctx, "worker: stopped mid-activity; the task is given back for redelivery")
		w.giveBack(ctx, msg)
	}
	mem.done(x.result, x.finished, x.acked)
	return x
}

// takeTurn waits for the turn of a keyed attempt in keyedMemory and
// returns its entry; nil, for an unkeyed attempt, at once. It fails only
// when ctx ends first.
func (w *Worker) takeTurn(ctx context.Context, t task.Task, act *activity) (*keyedEntry, error) {
	if t.OperationID == "" && act.key == nil {
		return nil, nil
	}
	return w.keyed.take(ctx, attemptKeyOf(t))
}

// delivery is one decoded task message.
type delivery struct {
	t       task.Task
	attempt string    // the engineAttemptId: the delivery count
	stored  time.Time // when the stream stored the message, by the server's clock
}

// decodeTask decodes the task and returns it with its engineAttemptId, the
// delivery count, and the time it was stored.
func decodeTask(msg jetstream.Msg) (delivery, error) {
	meta, err := msg.Metadata()
	if err != nil {
		return delivery{}, fmt.Errorf("no JetStream metadata: %w", err)
	}
	var t task.Task
	if err := json.Unmarshal(msg.Data(), &t); err != nil {
		return delivery{}, fmt.Errorf("not a task: %w", err)
	}
	switch {
	case t.SchemaVersion > task.SchemaVersion:
		return delivery{}, fmt.Errorf("task schema version %d is newer than this worker's %d", t.SchemaVersion, task.SchemaVersion)
	case t.StepID == "" || t.LogicalAttemptID == "":
		return delivery{}, fmt.Errorf("the task lacks a stepId or logicalAttemptId")
	}
	if _, err := streams.ResultSubject(t.RunID); err != nil {
		return delivery{}, fmt.Errorf("the task's runId: %w", err)
	}
	return delivery{t: t, attempt: strconv.FormatUint(meta.NumDelivered, 10), stored: meta.Timestamp}, nil
}

// terminate drops a task no worker can run: redelivering it would fail the
// same way. The engine's sweep finds the step never started.
func (w *Worker) terminate(ctx context.Context, msg jetstream.Msg, cause error) {
	attrs := []any{"subject", msg.Subject(), "err", cause}
	if meta, err := msg.Metadata(); err == nil {
		attrs = append(attrs, "stream_seq", meta.Sequence.Stream, "num_delivered", meta.NumDelivered)
	}
	w.logger.ErrorContext(ctx, "worker: undecodable task terminated", attrs...)
	if err := msg.Term(); err != nil {
		w.logger.WarnContext(ctx, "worker: term of an undecodable task failed", "err", err)
	}
}

// heartbeat tells JetStream every interval that msg is in progress, until
// the returned stop is called or ctx ends (stop waits for the heartbeat to
// end).
func (w *Worker) heartbeat(ctx context.Context, msg jetstream.Msg, every time.Duration, log *slog.Logger) (stop func()) {
	ctx, quit := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		loop := periodic.Loop{Interval: every, Logger: log, Failed: "worker: heartbeat failed"}
		loop.Run(ctx, func(context.Context) error { return msg.InProgress() })
	}()
	return func() { quit(); <-ended }
}

// reportStartedAfter reports the StepStarted of an unkeyed attempt once it
// has run for Config.StartedAfter; at once when that is negative. (A keyed
// attempt reports its StepStarted before it runs: startKeyed.) It returns
// what to call when the attempt ends: it cancels a report not yet due and
// waits for one in flight, so that a StepStarted that is published always
// precedes the final result on the run's result subject.
func (w *Worker) reportStartedAfter(ctx context.Context, run *attemptRun) (end func()) {
	if w.cfg.StartedAfter < 0 {
		w.reportStarted(ctx, run)
		return func() {}
	}
	sent := make(chan struct{})
	timer := time.AfterFunc(w.cfg.StartedAfter, func() {
		defer close(sent)
		w.reportStarted(ctx, run)
	})
	return func() {
		if !timer.Stop() {
			<-sent
		}
	}
}

// reportStarted publishes the StepStarted of an unkeyed attempt. It fails
// open: over the latency budget (PublishTimeout) or on error the activity
// runs anyway, and the engine learns the step started from its final
// result.
func (w *Worker) reportStarted(ctx context.Context, run *attemptRun) {
	if _, err := w.publishAck(ctx, run.stamp(task.NewResult(run.t, task.Started, run.attempt, w.cfg.WorkerID))); err != nil {
		run.log.WarnContext(ctx, "worker: StepStarted not published; running the activity anyway", "err", err)
	}
}

// startKeyed publishes the StepStarted of a keyed attempt, with its
// reconciliation scope (the activity key the engine records should the run
// be cancelled in flight), and waits for the PubAck: the activity may run
// only once it returns without error, so that every run of the activity
// left a StepStarted on the bus. Its Nats-Msg-Id is the logical attempt's,
// the same for every delivery on every worker, so a duplicate PubAck
// proves that an earlier delivery stored it, within the stream's dedupe
// window, and so may have run the activity: begun reports that.
func (w *Worker) startKeyed(ctx context.Context, run *attemptRun) (begun bool, err error) {
	r := run.stamp(task.NewResult(run.t, task.Started, run.attempt, w.cfg.WorkerID))
	scope := *run.scope
	r.Reconcile = &scope
	ack, err := w.publishAck(ctx, r)
	if err != nil {
		return false, err
	}
	return ack.Duplicate, nil
}

// publish publishes r on the run's result subject (publishAck).
func (w *Worker) publish(ctx context.Context, r task.Result) error {
	_, err := w.publishAck(ctx, r)
	return err
}

// publishAck publishes r on the run's result subject with Nats-Msg-Id set
// to r.MsgID() (its idempotency key bound to its task's token, which a
// forger without the task cannot compute) and waits up to PublishTimeout for the PubAck,
// which it returns. A duplicate PubAck (the key was stored before) is a
// success.
func (w *Worker) publishAck(ctx context.Context, r task.Result) (*jetstream.PubAck, error) {
	subject, err := streams.ResultSubject(r.RunID)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("worker: encode %s result: %w", r.Kind, err)
	}
	pctx, cancel := context.WithTimeout(ctx, w.cfg.PublishTimeout)
	defer cancel()
	m := &nats.Msg{Subject: subject, Data: data}
	tracing.InjectNATS(ctx, m)
	ack, err := w.js.PublishMsg(pctx, m,
		jetstream.WithMsgID(r.MsgID()), jetstream.WithExpectStream(streams.ResultsStream))
	if err != nil {
		return nil, fmt.Errorf("worker: publish %s result: %w", r.Kind, err)
	}
	return ack, nil
}

// report publishes a final result, logs it, and reports whether it was
// published. The log carries the error's code and redacted message, never
// the output.
func (w *Worker) report(ctx context.Context, r task.Result, log *slog.Logger) bool {
	if err := w.publish(ctx, r); err != nil {
		log.WarnContext(ctx, "worker: final result not published", "kind", r.Kind, "err", err)
		return false
	}
	if r.Error != nil {
		log.InfoContext(ctx, "worker: step failed", "code", r.Error.Code, "retryable", r.Error.Retryable,
			"message", r.Error.Message)
		return true
	}
	log.DebugContext(ctx, "worker: step completed")
	return true
}

// settle acks a task whose final result is published, and otherwise naks
// it with RedeliveryDelay so the attempt runs again: a final result is
// never reported without a durable write. It reports whether the server
// confirmed the ack.
func (w *Worker) settle(ctx context.Context, msg jetstream.Msg, published bool, log *slog.Logger) (acked bool) {
	if !published {
		if err := msg.NakWithDelay(w.cfg.RedeliveryDelay); err != nil {
			log.WarnContext(ctx, "worker: nak failed; the task is redelivered after AckWait instead of RedeliveryDelay", "err", err)
		}
		return false
	}
	actx, cancel := context.WithTimeout(ctx, w.cfg.PublishTimeout)
	defer cancel()
	if err := msg.DoubleAck(actx); err != nil {
		log.WarnContext(ctx, "worker: ack failed; the task is redelivered and its results deduplicated", "err", err)
		return false
	}
	return true
}
