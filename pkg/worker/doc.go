// Package worker is the Go SDK of Weft activity workers. It implements the
// worker protocol of docs/worker-protocol.md over NATS JetStream; a worker
// never touches Postgres.
//
// A Worker serves one task queue. Register each activity by name, then
// Start:
//
//	w, err := worker.New(js, worker.Config{Queue: "default", Concurrency: 8},
//		worker.WithSecretsProvider("env", worker.EnvSecrets{Prefix: "WEFT_SECRET_"}))
//	err = w.Register("greet", func(ctx context.Context, in worker.Input) (worker.Output, error) {
//		return worker.NewOutput(map[string]string{"greeting": "hi"})
//	}, worker.WithTimeout(time.Minute))
//	err = w.Start(ctx)
//	defer w.Stop(drainCtx)
//
// # Flow of a task
//
// The worker pulls from the queue's durable consumers only as many tasks
// as it has free slots (Config.Concurrency), one per free slot, fairly
// across tenants: a run's tasks go on its tenant's lane
// (weft.tasks.<queue>.<lane> in the queue's lanes stream,
// streams.TaskLanesStream and streams.TaskLaneConsumer; tasks of no tenant
// on weft.tasks.<queue>, streams.TaskConsumer), and each free slot takes a
// task from the next lane, in round-robin order, that has one. So one
// tenant's backlog delays another tenant's task by at most one task per
// slot. For each task:
//
//  1. Decode it. A message that is not a task is terminated and logged at
//     error level: redelivering it would fail the same way.
//  2. Publish a StepStarted result once the attempt has run for
//     Config.StartedAfter (100 ms by default; at once for a keyed attempt).
//     An attempt that ends sooner publishes only its final result, and the
//     engine records StepStarted with it. A task for an activity not
//     registered here gets a non-retryable StepFailed (CodeUnknownActivity).
//  3. For a keyed attempt that may have run before, reconcile (below); it
//     may settle the attempt without running the activity.
//  4. Run the activity with the task's deadline, sending in-progress
//     heartbeats every third of AckWait so JetStream keeps the task here.
//  5. Publish StepCompleted or StepFailed, with Nats-Msg-Id = the result's
//     MsgID (its idempotency key bound to the task's token), and wait for
//     the PubAck.
//  6. Ack the task (and wait for the server to confirm).
//
// Every worker of a queue shares its consumer, so every worker of a queue
// must register the same activities: a task for a name this worker lacks
// fails the step at once rather than waiting for another worker.
//
// The delivery count is the attempt's engineAttemptId; every delivery of a
// logical attempt reports under the same idempotency keys, so JetStream
// stores a result of each kind once and the engine records the first.
//
// # Progress heartbeats
//
// An activity of a step with a heartbeatTimeout calls Input.Heartbeat with
// its progress more often than the timeout; the worker puts the step's
// last heartbeat in the engine's WEFT_HEARTBEATS bucket, not in the run's
// event log. An attempt that goes silent fails with HEARTBEAT_TIMEOUT, its
// context ends on the engine's cancel notice, and the retry finds the last
// details in Input.LastHeartbeat. These are not the in-progress acks of
// step 4, which only keep JetStream from redelivering the task
// (docs/worker-protocol.md, "Heartbeats").
//
// # Reconciliation
//
// An attempt is keyed when the plan step has an idempotencyKey or the
// activity derives one (WithIdempotencyKey). A keyed delivery that may have
// run before (a redelivery, an engine re-send, a retry) first asks the
// engine for the operation's durable record (a NATS request; the worker
// never touches Postgres) and reports it if there is one; otherwise it asks
// the activity's verify hook (WithVerify), which answers with a
// VerifyState, and runs the activity only on VerifyNotCompleted or when
// there is no hook. Input.FencingToken lets external systems refuse a
// stale attempt's writes. docs/reconciliation.md has the rules.
//
// A delivery count of 1 is not trusted alone: a nats-server restarted
// without its latest consumer state, or a consumer created again, hands an
// earlier delivery out as delivery 1. The worker remembers the keyed
// attempts it has begun: it runs two deliveries of one in turn, never at
// once; it reports again a final result it could not ack rather than
// running the activity again; and it reconciles a redelivery of an attempt
// it began whatever the count. A keyed task stored before the worker was
// built, or before its connection reconnected, a pull failed or it created
// its consumer again, is reconciled at delivery 1 too.
//
// # Logs
//
// Each delivery logs "worker: attempt started" and "worker: attempt ended"
// at info level, with the attempt's ids; the end line carries outcome,
// settled_by ("activity" when the activity ran), published, acked,
// duration_ms and, on a failure, code (docs/worker-protocol.md, "Logs").
//
// # Latency budget
//
// Each result publish waits at most Config.PublishTimeout for its PubAck
// (execution-semantics §5). StepStarted fails open: over budget, the
// activity runs anyway. StepCompleted and StepFailed never fail open: when
// the final result is not acknowledged in time, the worker does not ack the
// task but naks it with Config.RedeliveryDelay, so the same logical attempt
// runs again (engineAttemptId + 1) and reports under the same keys. It does
// not turn the lost write into a failed step.
//
// # Errors
//
// An activity reports failure by returning an error. An *Error (see
// NonRetryable and Retryable) sets the code and retryability; any other
// error is CodeActivityError, retryable. A panic is recovered as CodePanic.
// When the activity's context ended first, the reason wins: CodeTimeout at
// the deadline, CodeCancelled on a cancel notice. An output that is not
// JSON, exceeds Config.MaxOutputBytes, or contains a secret value fails the
// step non-retryably and is never published.
//
// # Stopping
//
// Stop stops pulling and lets running activities finish until its context
// ends; then it cancels them and gives their tasks back (Nak) without
// reporting a result, so another worker runs them as the next delivery. A
// worker that dies instead leaves its tasks to be redelivered after
// AckWait. Cancelling Start's context is the same hard stop. A worker whose
// NATS connection closes for good (its owner closed it, or its reconnects
// were spent or refused) stops by itself: Stopped is closed and Err is
// ErrConnectionClosed, so a process that waits on Stopped as well as on
// its own end can exit instead of pulling in vain.
//
// # Secrets
//
// A task carries secret references (plan.SecretRef); an activity resolves
// them with Input.Secret through the SecretsProvider registered for the
// reference's provider name (WithSecretsProvider). EnvSecrets and
// FileSecrets ship with the package; a worker has no provider unless one is
// registered. The worker never logs a task's input or a secret value. It
// redacts resolved values (of 4 bytes or more) from failure messages and
// refuses an output that contains one.
package worker
