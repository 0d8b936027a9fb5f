// Package client is the Go client of the REST API of Weft's signal gateway:
// start a run of a plan, send a signal to a run. The wire types are those of
// pkg/api, which the gateway shares.
//
//	c, err := client.New("https://weft.example.com", client.WithToken(apiKey))
//	run, err := c.StartRun(ctx, api.StartRunRequest{TenantID: "t", …, Plan: plan})
//	acc, err := c.Signal(ctx, run.RunID, api.SignalRequest{SignalName: "PAUSE"})
//
// A Client is safe for concurrent use.
//
// # Idempotency
//
// Both calls are idempotent on an id the gateway deduplicates:
// StartRunRequest.RunRequestID and SignalRequest.SignalID. When the caller
// leaves it empty the client sets a fresh UUIDv7 before the first attempt
// and sends the same id on every retry, so a retried call starts at most one
// run and enqueues a signal at most once. The gateway answers a repeat with
// the first request's result (StartRunResult.Duplicate is true for a
// repeated start). Set the id yourself to extend that guarantee to your own
// retries of a call.
//
// # Retries
//
// A call is sent at most RetryPolicy.MaxAttempts times (default 5). It is
// retried after a transport failure (connection refused or reset, a
// timeout of the attempt) and after HTTP 429, 500, 502, 503 and 504; never
// after any other answer, never once the call's context is done, and never
// after a TLS certificate error. The wait before a retry is a
// full-jitter exponential backoff (see RetryPolicy), or the answer's
// Retry-After when that is longer. When the wait would end past the
// context's deadline the call returns the last error at once instead of
// waiting; when the context ends during the wait, the call returns at once
// with an error wrapping both ctx.Err() and the last error.
//
// # Errors
//
// Every error for an HTTP error answer wraps an *Error holding the status,
// the gateway's stable code (the api.Code… constants), message, details
// and Retry-After. Branch on the code with IsCode or errors.As:
//
//	if client.IsCode(err, api.CodeSignalAcceptanceIndeterminate) { … }
//
// A call that failed after retries says how many attempts it made and
// wraps the last attempt's error. Requests refused before sending wrap
// ErrInvalidRequest; a 2xx answer that cannot be decoded wraps
// ErrUnexpectedResponse. Response bodies are read up to MaxResponseBytes.
package client
