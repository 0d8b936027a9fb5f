// Package bulk runs the gateway's bulk jobs (docs/api.md, "Bulk
// operations"): POST /v1/bulk acts on every run of the caller's tenant a
// filter matches, as a durable background job.
//
// Creating a job records it and the runs its filter matches then, in the
// runs list's order, in one transaction (bulk_jobs, bulk_job_runs), up to
// Config.MaxRuns; it is idempotent on the bulkId. Any gateway's Runner
// takes a job under a lease and works through its runs in batches, at
// most Config.Rate runs a second across the job, so that a large job does
// not starve live traffic. Each run's action goes through the gateway's
// own paths, as the caller's request would: a signal (intake.SignalSend)
// whose id is derived from the bulkId ("bulk-<bulkId>", one per step for
// RETRY_FAILED_STEPS), or a rerun (intake.Rerun) whose runRequestId is.
// The batch's counters and the cursor move in one statement after its
// actions, so a job taken over after a crash redoes at most one batch,
// whose signals and reruns are then answered as duplicates and counted
// once. A run whose state makes the action pointless is skipped, with
// its reason counted; one the gateway refuses otherwise is failed.
package bulk
