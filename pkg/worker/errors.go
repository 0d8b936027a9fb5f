package worker

import "errors"

// Error codes the worker reports in a StepFailed result. An activity may
// use any other code through *Error.
const (
	// CodeActivityError: the activity returned a plain (untyped) error.
	// Retryable.
	CodeActivityError = "ACTIVITY_ERROR"
	// CodePanic: the activity panicked; the worker recovered. Retryable,
	// unless the step's retry policy lists the code.
	CodePanic = "PANIC"
	// CodeTimeout: the attempt's deadline (the task's timeoutMs, capped by
	// WithTimeout) passed before the activity returned an answer. Retryable.
	CodeTimeout = "TIMEOUT"
	// CodeCancelled: a cancel notice for the run stopped the activity. Not
	// retryable.
	CodeCancelled = "CANCELLED"
	// CodeUnknownActivity: no activity of the task's name is registered
	// with this worker. Not retryable.
	CodeUnknownActivity = "UNKNOWN_ACTIVITY"
	// CodeOutputTooLarge: the output and artifact list exceed
	// Config.MaxOutputBytes. Not retryable; the output is not published.
	CodeOutputTooLarge = "OUTPUT_TOO_LARGE"
	// CodeInvalidOutput: the output is not valid JSON, or an artifact
	// lacks its uri or kind. Not retryable; the output is not published.
	CodeInvalidOutput = "INVALID_OUTPUT"
	// CodeSecretInOutput: the output or an artifact contains the value of
	// a secret the activity resolved. Not retryable; not published.
	CodeSecretInOutput = "SECRET_IN_OUTPUT"
	// CodeInvalidIdempotencyKey: the activity's WithIdempotencyKey function
	// failed or returned an empty key. Not retryable: the input decides it.
	CodeInvalidIdempotencyKey = "INVALID_IDEMPOTENCY_KEY"
)

// Error categories, the coarse grouping of a StepError's code.
const (
	// CategoryActivity: the activity's own code failed (an error or a
	// panic). The default category of an *Error.
	CategoryActivity = "ACTIVITY"
	// CategoryTimeout: the attempt ran out of time.
	CategoryTimeout = "TIMEOUT"
	// CategoryCancelled: the run was cancelled.
	CategoryCancelled = "CANCELLED"
	// CategoryWorker: the worker refused the task or its output.
	CategoryWorker = "WORKER"
)

// Error is an activity failure with the fields of the StepFailed result it
// becomes. Return one (directly or wrapped) from an ActivityFunc to choose
// the code and whether the engine may retry; any other error is reported as
// CodeActivityError, retryable. Message is shown to people and stored in
// the run's history: it must not carry secret values or large blobs (the
// worker redacts the values of the secrets the activity resolved, and
// truncates long messages, as a safety net).
type Error struct {
	// Code is a stable, machine-readable code; a step's retry policy may
	// list it as non-retryable. Empty means CodeActivityError.
	Code string
	// Message describes the failure for people.
	Message string
	// Retryable reports whether a new attempt may succeed.
	Retryable bool
	// Category groups codes; empty means CategoryActivity.
	Category string
	// AfterSideEffect reports that the failure came after the side effect
	// may have happened. A keyed attempt's reconciliation record is then
	// indeterminate rather than failed, and a retry verifies before it runs
	// (docs/reconciliation.md).
	AfterSideEffect bool
}

// Error returns "code: message".
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// NonRetryable returns an *Error that ends the step: the engine does not
// retry it, whatever the step's retry policy.
func NonRetryable(code, message string) *Error {
	return &Error{Code: code, Message: message, Category: CategoryActivity}
}

// Retryable returns an *Error the engine retries under the step's retry
// policy (unless the policy lists code as non-retryable).
func Retryable(code, message string) *Error {
	return &Error{Code: code, Message: message, Retryable: true, Category: CategoryActivity}
}

// FailedAfterSideEffect returns a retryable *Error for a failure after the
// side effect may have happened (say, a payment request sent and its
// answer lost): the record says indeterminate, and the retry's verify
// hook, if any, decides whether the side effect needs doing.
func FailedAfterSideEffect(code, message string) *Error {
	return &Error{Code: code, Message: message, Retryable: true, Category: CategoryActivity, AfterSideEffect: true}
}

// Sentinel errors. Each is wrapped by the errors that report it, so
// callers can test with errors.Is.
var (
	// ErrInvalidConfig is wrapped by every error New and Register return
	// for a bad Config, option or registration.
	ErrInvalidConfig = errors.New("worker: invalid config")
	// ErrUnknownSecret is returned by Input.Secret for a name the step does
	// not list in its secrets.
	ErrUnknownSecret = errors.New("worker: the step lists no secret of this name")
	// ErrNoSecretsProvider is returned by Input.Secret when the secret's
	// provider is not registered with the worker (WithSecretsProvider).
	ErrNoSecretsProvider = errors.New("worker: no secrets provider of this name")
	// ErrSecretNotFound is returned by a SecretsProvider when the key it
	// was asked for does not exist.
	ErrSecretNotFound = errors.New("worker: secret not found")
	// ErrConnectionClosed is the Err of a worker that stopped by itself
	// because its NATS connection closed for good (closed by its owner,
	// or its reconnects spent or refused, as when its credentials changed):
	// no pull could ever succeed again.
	ErrConnectionClosed = errors.New("worker: the NATS connection is closed for good")
)
