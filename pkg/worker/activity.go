package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/weftrun/weft/pkg/events"
)

// ActivityFunc runs one attempt of an activity step. ctx ends at the
// attempt's deadline, on a cancel notice for the run, and when the worker
// is stopped for good; the function must return promptly then, because the
// worker's slot (and Worker.Stop) waits for it. A nil error reports the
// step completed with the Output; an error reports it failed (see Error for
// how the code and retryability are chosen). The function may run more
// than once for one logical attempt (a redelivery after a crash), so side
// effects should be keyed by Input.IdempotencyKey and fenced by
// Input.FencingToken. A keyed activity with a verify hook (WithVerify) is
// reconciled before it runs again (docs/reconciliation.md).
type ActivityFunc func(ctx context.Context, in Input) (Output, error)

// Input is what an activity receives about its task.
type Input struct {
	// JSON is the step's input exactly as the task carries it: secret
	// references ({"secretRef": name}), never values. It may be empty.
	JSON json.RawMessage
	// IdempotencyKey is the activity-level key of the side effect, the
	// same for every delivery of the logical attempt.
	IdempotencyKey string
	// RunID, StepID and PlanVersion identify the step.
	RunID       string
	StepID      string
	PlanVersion string
	// TenantID is the tenant of the run, as the engine put it on the task
	// (empty from an engine that predates it). A multi-tenant activity
	// scopes what it touches by it; TenantSecrets scopes secrets by it.
	TenantID string
	// LogicalAttemptID counts the engine's retries of the step ("1"
	// first); EngineAttemptID counts the deliveries of this logical
	// attempt ("1" first, higher after a worker crash or stop).
	LogicalAttemptID string
	EngineAttemptID  string
	// FencingToken grows with every logical attempt of the step and is the
	// same for every delivery of one: an external system that stores the
	// highest token it accepted for a resource, and refuses a write with a
	// lower one, shuts out a stale attempt still running after the engine
	// moved on to a retry (docs/reconciliation.md, "Fencing token").
	FencingToken uint64
	// Activity and Queue are the task's activity name and queue.
	Activity string
	Queue    string
	// ScheduledAt is when the engine scheduled the attempt.
	ScheduledAt time.Time
	// LastHeartbeat is the details of the step's last heartbeat (Heartbeat)
	// sent by an earlier attempt or delivery, for a retry to resume from;
	// empty when there was none, for a first delivery of a first attempt,
	// or when the heartbeat store could not be read.
	LastHeartbeat json.RawMessage

	secrets *secretSet
	beat    *heartbeat
}

// Decode unmarshals the input JSON into v.
func (in Input) Decode(v any) error {
	if len(in.JSON) == 0 {
		return fmt.Errorf("worker: the task has no input")
	}
	if err := json.Unmarshal(in.JSON, v); err != nil {
		return fmt.Errorf("worker: decode input: %w", err)
	}
	return nil
}

// Secret returns the value of the step's secret called name, resolved
// through the worker's secrets provider for it. It fails with
// ErrUnknownSecret when the step does not list name, ErrNoSecretsProvider
// when the worker has no provider of the secret's kind, and otherwise with
// the provider's error; no error carries the value. The value is cached
// for the attempt and redacted from the attempt's failure message; an
// output that contains it is refused (CodeSecretInOutput). Never log it.
// Safe for concurrent use.
func (in Input) Secret(ctx context.Context, name string) (string, error) {
	if in.secrets == nil {
		return "", fmt.Errorf("%w: %q", ErrUnknownSecret, name)
	}
	return in.secrets.resolve(ctx, name)
}

// Output is what a completed activity reports. It goes into the run's
// history: small, references only; blobs belong in artifacts.
type Output struct {
	// JSON is the step's output, a JSON value, or empty for none.
	JSON json.RawMessage
	// Artifacts points at what the step stored elsewhere.
	Artifacts []events.ArtifactRef
}

// NewOutput returns an Output whose JSON is v marshalled.
func NewOutput(v any) (Output, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Output{}, fmt.Errorf("worker: encode output: %w", err)
	}
	return Output{JSON: b}, nil
}

// ActivityOption tunes one registered activity.
type ActivityOption func(*activity) error

// activity is a registered activity.
type activity struct {
	fn ActivityFunc
	// timeout caps the attempt's deadline; zero means the task's alone.
	timeout time.Duration
	// heartbeat is the interval of in-progress signals; zero means a third
	// of the consumer's AckWait.
	heartbeat time.Duration
	// key derives Input.IdempotencyKey from the input; nil keeps the task's.
	key func(Input) (string, error)
	// verify reconciles a keyed attempt that may have run before; nil runs
	// it again.
	verify VerifyFunc
}

// WithIdempotencyKey derives the activity's idempotency key from its input,
// in place of the task's (the step's idempotencyKey, else one per logical
// attempt): for a side effect that must happen once per business object
// (an order id, say) across runs and retries. key sees the Input, secrets
// unresolved, and must be deterministic; an error or an empty key fails the
// attempt with CodeInvalidIdempotencyKey, not retryable, before the
// activity runs. An activity with a derived key is keyed: its attempts are
// reconciled (docs/reconciliation.md) whether or not the plan step has a
// key.
func WithIdempotencyKey(key func(Input) (string, error)) ActivityOption {
	return func(a *activity) error {
		if key == nil {
			return fmt.Errorf("%w: nil idempotency key function", ErrInvalidConfig)
		}
		a.key = key
		return nil
	}
}

// WithTimeout caps every attempt of the activity at d: the deadline is the
// smaller of the task's timeoutMs and d. A task without timeoutMs gets d.
func WithTimeout(d time.Duration) ActivityOption {
	return func(a *activity) error {
		if d <= 0 {
			return fmt.Errorf("%w: activity timeout %v is not positive", ErrInvalidConfig, d)
		}
		a.timeout = d
		return nil
	}
}

// WithHeartbeat sets how often the worker tells JetStream the activity's
// task is still in progress. It never exceeds a third of the consumer's
// AckWait (the default), which keeps the task from being handed to another
// worker; a shorter interval tolerates more lost heartbeats.
func WithHeartbeat(d time.Duration) ActivityOption {
	return func(a *activity) error {
		if d <= 0 {
			return fmt.Errorf("%w: heartbeat interval %v is not positive", ErrInvalidConfig, d)
		}
		a.heartbeat = d
		return nil
	}
}
