package decide

import (
	"encoding/json"
	"time"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/task"
)

// Input is what one round reacts to: exactly one of RunApproved,
// ResultStarted, ResultCompleted, ResultFailed, SignalAccepted and
// TimerFired. Each carries Now, the round's time, which Decide uses in
// place of a clock.
type Input interface {
	now() time.Time
}

// Now is in's Now, the round's time.
func Now(in Input) time.Time { return in.now() }

// RunApproved asks the engine to start an approved run (the run's
// RunApproved event was consumed, or the run queue released the run).
type RunApproved struct {
	// Full reports that the run's environment has no room (admission, under
	// the QUEUE policy): the run is queued (RunQueued, once) instead of
	// started, and stays APPROVED.
	Full bool
	// Hold, when Full, is what the RunQueued records: the limit that holds
	// the run.
	Hold events.RunQueuedData
	// DelayUntil, when set, starts the run at once but dispatches nothing
	// before it (admission, DELAY policy, into a full environment).
	DelayUntil time.Time
	// Refuse, when set, cancels the run instead of starting it, with
	// Refuse as RunCancelled's reason: a concurrency limit under
	// CANCEL_NEWEST that has no room for it.
	Refuse string
	// Rerun is what a rerun's start copies from its source (rerun.go).
	Rerun Rerun
	Now   time.Time
}

// ResultStarted reports that a worker began an attempt.
type ResultStarted struct {
	StepID         string
	LogicalAttempt int
	// EngineAttemptID is the platform's delivery count, recorded as is.
	EngineAttemptID string
	WorkerID        string
	// ActivityKey is the activity-level idempotency key the worker reported
	// for a keyed attempt (task.ResultReconcile), or empty.
	ActivityKey string
	// StartedAt is when the worker began the attempt, by its clock; zero
	// when it did not say (StepStarted then records the round's time).
	StartedAt time.Time
	Now       time.Time
}

// ResultCompleted reports that an attempt succeeded.
type ResultCompleted struct {
	StepID          string
	LogicalAttempt  int
	EngineAttemptID string
	// WorkerID is the worker that ran the attempt; the engine records it
	// in the attempt's StepStarted when no started result came first.
	WorkerID string
	// Output is the activity's small JSON result; it must be valid JSON
	// when set, or the attempt fails with CodeInvalidOutput.
	Output    json.RawMessage
	Artifacts []events.ArtifactRef
	// Reconcile is what the worker reported about reconciliation, nil for
	// an unkeyed attempt or an older worker.
	Reconcile *task.ResultReconcile
	// StartedAt is as in ResultStarted: the implied StepStarted records it.
	StartedAt time.Time
	Now       time.Time
}

// ResultFailed reports that an attempt failed.
type ResultFailed struct {
	StepID          string
	LogicalAttempt  int
	EngineAttemptID string
	// WorkerID is as in ResultCompleted.
	WorkerID string
	// Error is the failure; Error.Retryable false fails the step for good.
	Error events.StepError
	// Jitter is the round's random number in [0, 1) for the retry backoff
	// (plan.RetryPolicy.Backoff).
	Jitter float64
	// Reconcile and StartedAt are as in ResultCompleted.
	Reconcile *task.ResultReconcile
	StartedAt time.Time
	Now       time.Time
}

// SignalAccepted asks the engine to apply a signal the gateway accepted.
type SignalAccepted struct {
	// SignalID and Name identify the signal together; a signal is applied
	// at most once. An empty SignalID cannot be deduplicated and decides
	// nothing.
	SignalID string
	// Name is matched case-sensitively: a control signal (PAUSE, RESUME,
	// CANCEL, RETRY_STEP) or the signal of a waitSignal step.
	Name    string
	Payload json.RawMessage
	// EventID is the SignalAccepted event's eventId, a UUID, recorded as the
	// SignalApplied event's parentEventId; empty leaves that unset.
	EventID string
	Now     time.Time
}

// TimerFired reports that a Timer fell due.
type TimerFired struct {
	StepID         string
	LogicalAttempt int
	Kind           TimerKind
	// LastHeartbeat is, for a TimerHeartbeat, when the attempt's last
	// heartbeat was stored (the shell reads it from the heartbeat store);
	// zero when it sent none.
	LastHeartbeat time.Time
	// Jitter is as in ResultFailed, for the retry of an attempt a timeout
	// failed.
	Jitter float64
	Now    time.Time
}

// Resync asks the engine to re-drive a run that has not moved for a while,
// in case the bus lost a message it should have delivered (DESIGN.md, "The
// bus is a transport"): an approved run is started, accepted signals not
// yet applied are applied in order, and the tasks of activity attempts that
// look lost are dispatched again (Task.Resend). An attempt looks lost when
// it was scheduled more than its timeout ago and never started, or started
// more than its timeout plus TaskGrace ago and has no outcome.
type Resync struct {
	TaskGrace time.Duration
	// Full, Hold, DelayUntil and Refuse are RunApproved's, for an
	// approved run the resync would start.
	Full       bool
	Hold       events.RunQueuedData
	DelayUntil time.Time
	Refuse     string
	Rerun      Rerun
	Now        time.Time
}

func (in RunApproved) now() time.Time     { return in.Now }
func (in Resync) now() time.Time          { return in.Now }
func (in ResultStarted) now() time.Time   { return in.Now }
func (in ResultCompleted) now() time.Time { return in.Now }
func (in ResultFailed) now() time.Time    { return in.Now }
func (in SignalAccepted) now() time.Time  { return in.Now }

// SignalRef identifies a signal within a run: two signals of different
// names may share an id.
type SignalRef struct{ Name, ID string }

func (in SignalAccepted) ref() SignalRef { return SignalRef{Name: in.Name, ID: in.SignalID} }
func (in TimerFired) now() time.Time     { return in.Now }
