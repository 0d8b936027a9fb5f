// Package decide is the engine's pure decision function, in the "decider"
// shape: Decide(plan, state, input) returns the events to append, the tasks
// to dispatch, the timers to set and the cancel requests to send, and Fold
// rebuilds the state from the run's event log. Nothing here does I/O, reads
// the clock or draws random numbers: the time and the retry jitter come in
// with each input. The round loop around it (load, decide, append with a
// compare-and-swap on Head, write the outbox, commit, ack) lives in the
// engine service.
//
// # Lifecycle
//
// RunApproved → RunStarted → StepScheduled (roots, then each step whose
// dependencies all succeeded; independent steps together) → StepStarted →
// StepCompleted | StepFailed | StepSkipped → RunCompleted | RunFailed |
// RunCancelled. A failed attempt that its retry policy allows to retry gets
// StepRetryScheduled and a retry timer instead of StepFailed; when the timer
// fires, the next logical attempt is scheduled. A step that fails for good
// skips its transitive dependants, no new step is dispatched, and the run
// fails once nothing is in flight, after skipping the steps that never ran.
// A PAUSED run records results but dispatches nothing and never ends by
// itself; RESUME or CANCEL moves it on.
//
// # Idempotency keys
//
// events.New keys an event by (run, step, logical attempt, type, plan
// version), so two run-level events of one type would share a key and the
// log would keep only the first. The decider therefore writes the
// occurrence number (1, 2, …) of each repeatable run-level event, RunPaused,
// RunResumed and SignalApplied, into its LogicalAttemptID. State counts
// them, and the round's compare-and-swap on Head keeps two rounds from
// claiming the same number. Every other event names a (step, attempt, type)
// that the state allows at most once, so a duplicate decision can only
// repeat an existing key, which the log collapses.
//
// # Signals
//
// A run's signals apply in acceptance (runSeq) order, never in delivery
// order, however many engines share the bus's consumers. The state knows
// the signals accepted and not yet applied (State.Pending, from the
// SignalAccepted events in the log), so a round applies the pending ones
// first: a SignalAccepted input applies those accepted before it, then
// itself; any other input applies them all (after the start, for a
// RunApproved or a Resync, which stand for the approval accepted before
// any signal) before acting on it. A signal whose message comes late or
// never so takes effect at the run's next round at the latest.
//
// # Prepared plans
//
// What a decision reads of its plan alone (the steps' topological order,
// each step's ancestors and dependants, the compiled expressions) is the
// same in every round of every run of the plan. Prepare works it out once,
// as decisions first need it, and Prepared.Decide decides as Decide does
// without working it out again: the engine keeps one Prepared per plan
// document. State.ApplyDecided folds a decision's events into the state
// from the decision's own payloads, without decoding the events' encoded
// ones.
//
// # Fast path
//
// A duplicate or stale input (a result of an older logical attempt, a
// second result for a finished attempt, any result for a finished run, a
// signal whose id the run already applied) decides nothing but the pending
// signals it applies: with none pending, the Decision is empty and the
// round only acks.
package decide
