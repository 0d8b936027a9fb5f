package decide

import (
	"encoding/json"
	"time"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/task"
)

// Decision is what one round decided. Events go to the log in order, in one
// append with a compare-and-swap on the state's Head; Tasks, Timers and
// Cancels are written in the same transaction (outbox and timer table).
// The zero Decision decides nothing: the input was a duplicate or stale,
// and no accepted signal was pending.
type Decision struct {
	Events  []events.Spec
	Tasks   []Task
	Timers  []Timer
	Cancels []Cancel
	// Reconciliations are the reconciliation records of the keyed attempts
	// whose terminal event (or RunCancelled) is among Events, written in
	// the same transaction (docs/reconciliation.md). They never come
	// without events.
	Reconciliations []task.ReconcileRecord
	// Starts are the child runs the decision's subPlan attempts start,
	// whose RunApproved the shell appends in the same transaction
	// (subruns.go). They never come without events.
	Starts []ChildStart
	// ToOtherRuns are events for the logs of other runs: a child's
	// ChildRunEnded for its parent, a parent's CANCEL for its children.
	// The shell appends each only while its run has not ended, at that
	// run's head, where an event of the same idempotency key already in
	// the log is kept instead. They never come without events.
	ToOtherRuns []events.Spec
}

// Empty reports whether d decides nothing at all.
func (d Decision) Empty() bool {
	return len(d.Events) == 0 && len(d.Tasks) == 0 && len(d.Timers) == 0 && len(d.Cancels) == 0
}

// Task is one logical attempt of an activity step to publish on the task
// queue. Workers report its results with the same StepID and
// LogicalAttempt; RunID, StepID, LogicalAttempt and PlanVersion are what
// the idempotency keys of those results are computed from.
type Task struct {
	RunID string
	// TenantID is the run's tenant. Decide leaves it empty: the shell,
	// which holds the run's approval, sets it.
	TenantID       string
	PlanVersion    string
	StepID         string
	LogicalAttempt int
	Activity       string
	Queue          string
	// Input is the step's input, secret references only.
	Input json.RawMessage
	// Secrets lists the references the worker may resolve.
	Secrets []plan.SecretRef
	// IdempotencyKey is the step's activity-level key, if the plan sets one.
	IdempotencyKey string
	// Timeout bounds the attempt.
	Timeout time.Duration
	// Resend marks a task dispatched again by a Resync: the same logical
	// attempt, which the shell must publish under a fresh dedupe id, since
	// the bus may still remember the first one's.
	Resend bool
}

// TimerKind says what a timer is for.
type TimerKind string

// Timer kinds.
const (
	// TimerRetry fires when a retry's backoff has passed; the step's next
	// logical attempt is then scheduled.
	TimerRetry TimerKind = "retry"
	// TimerWaitTimeout fires when a waitSignal step has waited its timeout;
	// the step then fails with CodeSignalTimeout.
	TimerWaitTimeout TimerKind = "waitTimeout"
	// TimerDelay fires when a run started under the DELAY policy may
	// dispatch its first steps. It is a run timer: StepID is empty and
	// LogicalAttempt 1.
	TimerDelay TimerKind = "delay"
)

// Timer is a durable timer to hold until DueAt and then deliver as a
// TimerFired input. A timer is identified by (RunID, StepID,
// LogicalAttempt, Kind): setting one that exists moves its DueAt.
type Timer struct {
	RunID          string
	StepID         string
	LogicalAttempt int
	Kind           TimerKind
	DueAt          time.Time
}

// Cancel asks the workers of Queue to cancel the context of an in-flight
// attempt. It is a bus message, not an event: RunCancelled is the durable
// record, and State.InFlight lists what to cancel again if it is lost.
type Cancel struct {
	RunID          string
	StepID         string
	LogicalAttempt int
	Queue          string
	Reason         string
	// Notice names the notice the cancel belongs to, unique within its
	// run: empty for the run's cancellation (RunCancelled), else what
	// ended the attempt (timeouts.go). The cancels of one run and notice
	// go out as one message.
	Notice string
}

// Error codes the decider writes into events.StepError.Code.
const (
	// CodeSignalTimeout fails a waitSignal step whose timeout passed.
	CodeSignalTimeout = "SIGNAL_TIMEOUT"
	// CodeInvalidOutput fails an attempt whose reported output is not JSON.
	CodeInvalidOutput = "INVALID_OUTPUT"
	// CodeCancelled is the error of the reconciliation record of an
	// attempt in flight when its run was cancelled.
	CodeCancelled = "CANCELLED"
	// CodeExpressionError fails, for good, a step whose input's
	// expressions could not be evaluated when it was to be scheduled: a
	// missing key, a type error, the cost budget, or a resolved input over
	// plan.DefaultMaxStepInputBytes. The message names the JSON path.
	CodeExpressionError = "EXPRESSION_ERROR"
)
