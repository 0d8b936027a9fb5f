package client

import (
	"context"
	"net/http"

	"github.com/weftrun/weft/pkg/api"
)

// StartBulk starts a bulk job (POST /v1/bulk; docs/api.md, "Bulk
// operations"): req.Action on every run of the key's tenant req.Filter
// matches, worked through by the gateway in the background. created is
// true when this call started the job (202), false when the gateway
// already had the same request under req.BulkID (200): the job is then
// returned as it stands and nothing new starts (a retry after a lost 202
// answer reports false too). Follow the job with GetBulk.
//
// When req.BulkID is empty, StartBulk sets a fresh UUIDv7 before the first
// attempt and sends it on every retry, so retries start one job; the id is
// in the job. Another request under a BulkID already used fails with code
// api.CodeIdempotencyConflict; a bad field, or a filter matching more runs
// than the gateway's limit, with api.CodeInvalidArgument.
func (c *Client) StartBulk(ctx context.Context, req api.BulkRequest) (*api.BulkJob, bool, error) {
	if err := ensureID(&req.BulkID); err != nil {
		return nil, false, err
	}
	var job api.BulkJob
	status, err := c.callStatus(ctx, http.MethodPost, "/v1/bulk", req, &job)
	if err != nil {
		return nil, false, err
	}
	return &job, status == http.StatusAccepted, nil
}

// GetBulk reads bulk job id and its progress (GET /v1/bulk/{bulkId}). An
// unknown job yields code api.CodeNotFound.
func (c *Client) GetBulk(ctx context.Context, id string) (*api.BulkJob, error) {
	return into(func(j *api.BulkJob) error {
		return c.resourceCall(ctx, http.MethodGet, "/v1/bulk/", id, "", nil, j)
	})
}

// CancelBulk stops bulk job id (POST /v1/bulk/{bulkId}/cancel): no run is
// acted on after the batch in flight, and what was done stays done. The
// job is returned, CANCELLED unless it had already ended, which cancelling
// does not change. An unknown job yields code api.CodeNotFound.
func (c *Client) CancelBulk(ctx context.Context, id string) (*api.BulkJob, error) {
	return into(func(j *api.BulkJob) error {
		return c.resourceCall(ctx, http.MethodPost, "/v1/bulk/", id, "/cancel", nil, j)
	})
}
