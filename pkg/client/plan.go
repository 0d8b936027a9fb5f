package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/weftrun/weft/pkg/api"
)

// The calls of the plan registry (docs/api.md, "Registered plans"). A plan
// is named within a project: each call on one plan takes its projectID. A
// plan of another tenant or project, like one that does not exist, yields
// code api.CodeNotFound. A registered version is started by naming it in
// api.StartRunRequest.PlanRef instead of carrying Plan; a start naming an
// archived version yields code api.CodePlanArchived.

// PlanFilter selects the plan versions of ListPlans: those of ProjectID
// (empty: of every project of the key's tenant), one Page of them.
type PlanFilter struct {
	ProjectID string
	Page
}

// PushPlan registers the plan version req.Plan names by its own planId
// and planVersion (POST /v1/plans), checked as a start checks its plan.
// created is true when this call stored it (HTTP 201). A push of a
// version already stored with the same plan returns the stored version
// and created false, so a push is safe to repeat, and its retries are
// too: a retry after an attempt that stored the version but lost its
// answer returns created false. A version stored with another plan yields
// code api.CodePlanVersionConflict (versions are immutable: push the
// change under a new planVersion), with the stored version's digest in
// details.digest.
func (c *Client) PushPlan(ctx context.Context, req api.PlanPushRequest) (v *api.PlanVersion, created bool, err error) {
	v = new(api.PlanVersion)
	status, err := c.callStatus(ctx, http.MethodPost, "/v1/plans", req, v)
	if err != nil {
		return nil, false, err
	}
	return v, status == http.StatusCreated, nil
}

// ListPlans returns one page of the key's tenant's plan versions, newest
// first, without their plan documents (GET /v1/plans).
func (c *Client) ListPlans(ctx context.Context, f PlanFilter) (*api.PlanVersionList, error) {
	q := f.query()
	if f.ProjectID != "" {
		q.Set("projectId", f.ProjectID)
	}
	return into(func(l *api.PlanVersionList) error {
		return c.call(ctx, http.MethodGet, withQuery("/v1/plans", q), nil, l)
	})
}

// GetPlan reads plan planID of project projectID (GET
// /v1/plans/{planId}): one page of its versions, newest first, without
// their plan documents (pg; the zero Page is the first page of the
// gateway's default size, and NextCursor names the next), and, on every
// page, the version "latest" resolves to (Latest, empty when every
// version is archived).
func (c *Client) GetPlan(ctx context.Context, projectID, planID string, pg Page) (*api.Plan, error) {
	path, err := planPath(projectID, planID, "", pg.query())
	if err != nil {
		return nil, err
	}
	return into(func(p *api.Plan) error { return c.call(ctx, http.MethodGet, path, nil, p) })
}

// GetPlanVersion reads one version of plan planID with its plan document
// as stored (GET /v1/plans/{planId}/versions/{planVersion}). version
// names a version; "latest" is not resolved here.
func (c *Client) GetPlanVersion(ctx context.Context, projectID, planID, version string) (*api.PlanVersion, error) {
	return c.planVersionCall(ctx, http.MethodGet, projectID, planID, version, "")
}

// ArchivePlanVersion archives a version (POST
// /v1/plans/{planId}/versions/{planVersion}/archive): new starts naming
// it are refused with code api.CodePlanArchived, and "latest" passes
// over it; runs already started are untouched. Archiving an archived
// version changes nothing.
func (c *Client) ArchivePlanVersion(ctx context.Context, projectID, planID, version string) (*api.PlanVersion, error) {
	return c.planVersionCall(ctx, http.MethodPost, projectID, planID, version, "/archive")
}

// RestorePlanVersion lets an archived version be started again (POST
// /v1/plans/{planId}/versions/{planVersion}/restore); restoring a version
// not archived changes nothing.
func (c *Client) RestorePlanVersion(ctx context.Context, projectID, planID, version string) (*api.PlanVersion, error) {
	return c.planVersionCall(ctx, http.MethodPost, projectID, planID, version, "/restore")
}

// planVersionCall is method on the version's path with suffix, answered
// with the version.
func (c *Client) planVersionCall(ctx context.Context, method, projectID, planID, version, suffix string) (*api.PlanVersion, error) {
	if !validRunID(version) {
		return nil, fmt.Errorf("%w: plan version %q", ErrInvalidRequest, version)
	}
	path, err := planPath(projectID, planID, "/versions/"+url.PathEscape(version)+suffix, url.Values{})
	if err != nil {
		return nil, err
	}
	return into(func(v *api.PlanVersion) error { return c.call(ctx, method, path, nil, v) })
}

// planPath is the escaped path of plan planID, then rest, with q and
// ?projectId= as its query. An empty projectID, or a planID a URL would
// resolve away, is refused with ErrInvalidRequest.
func planPath(projectID, planID, rest string, q url.Values) (string, error) {
	switch {
	case projectID == "":
		return "", fmt.Errorf("%w: empty project id: a plan is named within its project", ErrInvalidRequest)
	case !validRunID(planID):
		return "", fmt.Errorf("%w: plan id %q", ErrInvalidRequest, planID)
	}
	q.Set("projectId", projectID)
	return withQuery("/v1/plans/"+url.PathEscape(planID)+rest, q), nil
}
