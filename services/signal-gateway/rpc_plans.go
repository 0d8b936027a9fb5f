package gateway

import (
	"context"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// The JSON-RPC methods of registered plans (docs/api.md, "JSON-RPC 2.0"):
// plan.push takes the body of POST /v1/plans, the others the REST
// endpoint's path and query parameters, as named params; each makes the
// REST handler's registry call, so a plan of another tenant or project
// is NotFound on every transport.

// planListParams asks for a page of the tenant's plan versions, of
// ProjectID unless it is empty.
type planListParams struct {
	ProjectID string `json:"projectId"`
	Limit     int    `json:"limit"`
	Cursor    string `json:"cursor"`
}

// planParams names a registered plan within its project and asks for a
// page of its versions.
type planParams struct {
	ProjectID string `json:"projectId"`
	PlanID    string `json:"planId"`
	Limit     int    `json:"limit"`
	Cursor    string `json:"cursor"`
}

// planVersionParams names a version of a registered plan.
type planVersionParams struct {
	ProjectID   string `json:"projectId"`
	PlanID      string `json:"planId"`
	PlanVersion string `json:"planVersion"`
}

// planGetParams is the body of a NATS plan read (PlanGetSubject): a
// plan's page of versions as plan.get's params ask for it, or, when
// PlanVersion is given, that version as plan.getVersion's do.
type planGetParams struct {
	planParams
	PlanVersion string `json:"planVersion"`
}

func (x planParams) requireIDs() error { return requirePlan(x.ProjectID, x.PlanID) }

func (x planVersionParams) requireIDs() error {
	return intake.Join(requirePlan(x.ProjectID, x.PlanID), requireID("planVersion", x.PlanVersion))
}

// requirePlan refuses an empty projectId or planId, listing each: a plan
// is named within its project.
func requirePlan(project, planID string) error {
	return intake.Join(requireID("projectId", project), requireID("planId", planID))
}

// rpcPlanPush registers the version req carries; a repeat with the same
// plan answers the stored version, as a repeated schedule.create does.
func (s *Service) rpcPlanPush(ctx context.Context, p auth.Principal, req api.PlanPushRequest) (any, error) {
	v, _, err := s.plans.Push(ctx, p, req)
	return v, err
}

func (s *Service) rpcPlanList(ctx context.Context, p auth.Principal, x planListParams) (any, error) {
	return s.plans.List(ctx, p, x.ProjectID, x.Cursor, x.Limit)
}

func (s *Service) rpcPlanGet(ctx context.Context, p auth.Principal, x planParams) (any, error) {
	return s.plans.Get(ctx, p, x.ProjectID, x.PlanID, x.Cursor, x.Limit)
}
