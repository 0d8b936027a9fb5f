package client

import (
	"context"
	"net/http"

	"github.com/weftrun/weft/pkg/api"
)

// Rerun starts a new run of run runID's plan version from step
// req.FromStepID (POST /v1/runs/{runId}/rerun; docs/api.md, "Rerun from a
// step"): that step and its descendants run anew, with req.Input when it
// is set (else the source run's input), and every other step's outcome in
// the source run is copied in. The source run never changes. The result is
// the new run; its Duplicate is true when the gateway had already started
// a rerun for the same RunRequestID and request, which is returned and
// nothing new is started.
//
// When req.RunRequestID is empty, Rerun sets a fresh UUIDv7 before the
// first attempt and sends it on every retry, so retries never start a
// second run; the id is in the result. req.RunID must be empty or equal
// runID (the path names the run; the body does not carry it). runID must
// not be empty, "." or "..": such a request fails with ErrInvalidRequest
// and is not sent.
//
// An HTTP error answer yields an error wrapping *Error: a source that has
// not ended, or a step to reuse that did not succeed, is
// api.CodeRerunRefused (409, not retried); an unknown step is
// api.CodeInvalidArgument.
func (c *Client) Rerun(ctx context.Context, runID string, req api.RerunRequest) (*api.StartRunResult, error) {
	if err := checkRunTarget(runID, "RunID", req.RunID); err != nil {
		return nil, err
	}
	req.RunID = ""
	if err := ensureID(&req.RunRequestID); err != nil {
		return nil, err
	}
	var res api.StartRunResult
	if err := c.call(ctx, http.MethodPost, runPath(runID)+"/rerun", req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
