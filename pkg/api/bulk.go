package api

import "time"

// Bulk actions (POST /v1/bulk, docs/api.md "Bulk operations").
const (
	BulkCancel           = "CANCEL"
	BulkPause            = "PAUSE"
	BulkResume           = "RESUME"
	BulkRetryFailedSteps = "RETRY_FAILED_STEPS"
	BulkRerun            = "RERUN"
)

// BulkFilter selects the runs of a bulk job, as the runs list's filters
// do: every field set must match.
type BulkFilter struct {
	Status      []string          `json:"status,omitempty"`
	PlanID      string            `json:"planId,omitempty"`
	PlanVersion string            `json:"planVersion,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Parent      string            `json:"parent,omitempty"`
}

// BulkRequest starts a bulk job: Action on every run of the caller's
// tenant Filter matches when the job starts. It is idempotent on BulkID:
// the same request again answers the job, another request under the same
// id is refused with CodeIdempotencyConflict.
type BulkRequest struct {
	BulkID string     `json:"bulkId"`
	Action string     `json:"action"`
	Filter BulkFilter `json:"filter"`
}

// Bulk job statuses.
const (
	BulkRunning   = "RUNNING"
	BulkDone      = "DONE"
	BulkCancelled = "CANCELLED"
)

// BulkJob is a bulk job and its progress (GET /v1/bulk/{bulkId}).
// Matched counts the runs the filter matched when the job started; each
// is then done (its signal accepted, or its rerun started), skipped (its
// state made the action pointless: SkippedReasons counts why) or failed
// (the action was refused otherwise), once, in creation order.
type BulkJob struct {
	BulkRequest
	TenantID       string         `json:"tenantId"`
	Status         string         `json:"status"`
	Matched        int64          `json:"matched"`
	Done           int64          `json:"done"`
	Skipped        int64          `json:"skipped"`
	Failed         int64          `json:"failed"`
	SkippedReasons map[string]int `json:"skippedReasons"`
	CreatedAt      time.Time      `json:"createdAt"`
	EndedAt        *time.Time     `json:"endedAt,omitempty"`
}
