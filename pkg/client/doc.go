// Package client is the Go client of Weft's HTTP APIs: the signal
// gateway's (start a run of a plan, send a signal to a run, keep schedules
// and event triggers and send events; docs/api.md, docs/schedules.md)
// and the projector's read API (read a run, wait for it to change, list
// runs, page through a run's events; docs/read-api.md). The wire types are
// those of pkg/api, which the services share.
//
//	c, err := client.New("https://weft.example.com", client.WithToken(apiKey),
//		client.WithReadURL("https://weft-read.example.com"))
//	run, err := c.StartRun(ctx, api.StartRunRequest{TenantID: "t", …, Plan: plan})
//	acc, err := c.Signal(ctx, run.RunID, api.SignalRequest{SignalName: "PAUSE"})
//	view, err := c.WaitRun(ctx, run.RunID, 0)
//
// A Client is safe for concurrent use.
//
// # Two addresses
//
// The gateway and the read API are separate services on separate
// listeners (under `weft dev`, http://127.0.0.1:8080 and
// http://127.0.0.1:8081). New takes the gateway's URL; WithReadURL names
// the read API's. One Client with one API key serves both. The read calls
// (GetRun, WaitRun, ListRuns, Runs, RunEvents, Step, StepChildren) of a
// Client built without WithReadURL fail with ErrNoReadURL.
//
// # Waiting for a run
//
// WaitRun long-polls: it returns as soon as the run has an event past the
// runSeq the caller already saw, without busy polling. To follow a run to
// its end:
//
//	seq := int64(0)
//	for {
//		v, err := c.WaitRun(ctx, runID, seq)
//		if err != nil { … }
//		if v.Status.Terminal() { break }
//		seq = v.LastEventSeq
//	}
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
// Schedules and triggers are idempotent the same way: CreateSchedule,
// CreateTrigger and SendTriggerEvent set a fresh ScheduleID, TriggerID or
// EventID when the caller leaves it empty, before the first attempt. A
// create repeating an existing id with the same definition returns the
// existing schedule or trigger; a redelivered event returns its first
// run with Duplicate set. Rerun (a new run of a run from one of its steps)
// is idempotent on RerunRequest.RunRequestID, set the same way.
//
// # Registered plans
//
// PushPlan registers a plan version once (POST /v1/plans); a start then
// names it in StartRunRequest.PlanRef instead of carrying the plan, by
// version or as api.PlanVersionLatest:
//
//	v, created, err := c.PushPlan(ctx, api.PlanPushRequest{ProjectID: "shop", Plan: plan})
//	run, err := c.StartRun(ctx, api.StartRunRequest{TenantID: "t", ProjectID: "shop", …,
//		PlanRef: &api.PlanRef{PlanID: v.PlanID, PlanVersion: api.PlanVersionLatest}})
//
// A push is idempotent: the same plan again returns the stored version.
// ListPlans, GetPlan and GetPlanVersion read the registry;
// ArchivePlanVersion and RestorePlanVersion stop and allow starts of a
// version.
//
// # Retries
//
// A call is sent at most RetryPolicy.MaxAttempts times (default 5); a
// WaitRun poll counts as one call. It is
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
// A signal that can have no effect is refused before anything is written
// (docs/api.md, "Signals that can have no effect"): a name the run has no
// use for is ErrUnknownSignal (errors.Is; (*Error).Accepts lists the
// names the run takes), a signal to a run that has ended ErrRunTerminal.
//
// # A signal's verdict
//
// An accepted signal is applied by the engine, or ignored when it makes
// no sense in the run's state then (RESUME of a run that is not PAUSED,
// say). WaitSignal waits for that verdict, the run's SignalApplied event,
// through the read API:
//
//	acc, err := c.Signal(ctx, runID, api.SignalRequest{SignalName: "RESUME"})
//	verdict, err := c.WaitSignal(ctx, acc) // a *SignalIgnoredError if ignored
//
// A call that failed after retries says how many attempts it made and
// wraps the last attempt's error. Requests refused before sending wrap
// ErrInvalidRequest; a 2xx answer that cannot be decoded wraps
// ErrUnexpectedResponse. Response bodies are read up to MaxResponseBytes.
package client
