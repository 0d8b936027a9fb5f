package api

import (
	"encoding/json"
	"time"
)

// PlanVersionLatest is the PlanVersion of a PlanRef naming the newest version
// of the plan that is not archived, resolved when the start is taken in.
// No registered plan version may be named "latest".
const PlanVersionLatest = "latest"

// PlanRef names a version of a registered plan, in a start's planRef.
type PlanRef struct {
	PlanID string `json:"planId"`
	// PlanVersion is a version of the plan, or PlanVersionLatest.
	PlanVersion string `json:"planVersion"`
}

// PlanPushRequest registers a plan version (POST /v1/plans). The plan's
// own planId and planVersion name the version; a push of a version that
// is stored with the same plan (its canonical form) answers the stored
// version, one with another plan is refused with CodePlanVersionConflict.
type PlanPushRequest struct {
	// TenantID is optional: the caller's tenant when empty.
	TenantID  string `json:"tenantId,omitempty"`
	ProjectID string `json:"projectId"`
	// Plan is the plan document, validated as a start validates it.
	Plan json.RawMessage `json:"plan"`
}

// PlanVersion is a registered plan version (GET
// /v1/plans/{planId}/versions/{planVersion}). Versions are immutable but
// for ArchivedAt.
type PlanVersion struct {
	TenantID    string `json:"tenantId"`
	ProjectID   string `json:"projectId"`
	PlanID      string `json:"planId"`
	PlanVersion string `json:"planVersion"`
	// Digest is "sha256:" and the hex SHA-256 of the plan's canonical
	// JSON (object keys sorted, no white space): equal digests, equal
	// plans.
	Digest    string    `json:"digest"`
	CreatedAt time.Time `json:"createdAt"`
	// ArchivedAt is set while the version is archived: new starts by
	// planRef are refused with CodePlanArchived, and "latest" passes
	// over it; runs already started are untouched.
	ArchivedAt *time.Time `json:"archivedAt,omitempty"`
	// Plan is the plan document as stored; left out of lists.
	Plan json.RawMessage `json:"plan,omitempty"`
}

// PlanVersionList is a page of registered plan versions, newest first
// (GET /v1/plans), without their plan documents.
type PlanVersionList struct {
	Versions []PlanVersion `json:"versions"`
	// NextCursor fetches the next page; absent on the last.
	NextCursor string `json:"nextCursor,omitempty"`
}

// Plan is a registered plan: a page of its versions, newest first,
// without their plan documents (GET /v1/plans/{planId}).
type Plan struct {
	TenantID  string `json:"tenantId"`
	ProjectID string `json:"projectId"`
	PlanID    string `json:"planId"`
	// Latest is the version "latest" resolves to: the newest not
	// archived, on every page, whichever page holds it; absent when every
	// version is archived.
	Latest   string        `json:"latest,omitempty"`
	Versions []PlanVersion `json:"versions"`
	// NextCursor fetches the next page of Versions; absent on the last.
	NextCursor string `json:"nextCursor,omitempty"`
}
