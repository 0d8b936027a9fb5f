// Package schedule keeps the gateway's schedules and fires them: a
// schedule starts a run of its plan at every fire time of a cron
// expression in a timezone (docs/schedules.md).
//
// It lives inside the signal gateway, not in a service of its own,
// because every fire is a run start and cancel-previous a CANCEL signal,
// and both must go through the gateway's intake: the run-request
// uniqueness that makes a fire start at most one run, the plan and input
// limits, admission, the outbox. The scheduler loop (Service.Run) runs in
// every gateway process; any number may run at once.
//
// # Firing
//
// A fire's run request id is "{scheduleId}:{scheduledFor}", scheduledFor
// in RFC 3339 UTC, so a fire repeated by two schedulers, a restart or a
// replay finds the first fire's run in run_requests and starts nothing.
// Only one scheduler fires a schedule at a time: each claims due
// schedules with one UPDATE … FOR UPDATE SKIP LOCKED that sets a lease
// (claim_token, claimed_until), then fires each claimed schedule in one
// transaction that locks its row, checks the claim is still its own,
// starts the runs, advances next_fire_at and records the skipped fire
// times. A scheduler that dies between claim and commit leaves nothing but
// the lease, which expires; the next scheduler to claim the schedule fires
// it, applying the misfire policy if the fire time is older than the
// grace by then.
//
// What to do at a given moment is Decide, a pure function of the
// schedule's state, its policies and the time (the decider shape of
// STYLE.md); Service wraps it with the reads and writes.
package schedule
