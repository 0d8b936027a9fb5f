package gateway

import (
	"bytes"
	"context"
	"net/http"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// The REST endpoints of registered plans (docs/api.md, "Registered
// plans"), served through rest: each answers in the REST error shape; a
// plan of another tenant is NotFound. A plan is named within a project:
// the endpoints under /v1/plans/{planId} require ?projectId=.

func (s *Service) restPlanPush(r *http.Request, p auth.Principal) (any, error) {
	req, err := bodyOf[api.PlanPushRequest](s, r)
	if err != nil {
		return nil, err
	}
	v, created, err := s.plans.Push(r.Context(), p, req)
	return reply{createdStatus(created), v}, err
}

func (s *Service) restPlanList(r *http.Request, p auth.Principal) (any, error) {
	cursor, limit, err := pageQuery(r, "projectId")
	if err != nil {
		return nil, err
	}
	return s.plans.List(r.Context(), p, r.URL.Query().Get("projectId"), cursor, limit)
}

func (s *Service) restPlanGet(r *http.Request, p auth.Principal) (any, error) {
	cursor, limit, err := pageQuery(r, "projectId")
	if err != nil {
		return nil, err
	}
	project, err := requiredProject(r)
	if err != nil {
		return nil, err
	}
	return s.plans.Get(r.Context(), p, project, r.PathValue("planId"), cursor, limit)
}

func (s *Service) restPlanVersionGet(r *http.Request, p auth.Principal) (any, error) {
	return s.planVersionDo(r, p, s.plans.VersionGet)
}

func (s *Service) restPlanArchive(r *http.Request, p auth.Principal) (any, error) {
	return s.planVersionDo(r, p, s.plans.Archive)
}

func (s *Service) restPlanRestore(r *http.Request, p auth.Principal) (any, error) {
	return s.planVersionDo(r, p, s.plans.Restore)
}

// planVersionDo does do to the plan version r's path and ?projectId= name.
func (s *Service) planVersionDo(r *http.Request, p auth.Principal,
	do func(ctx context.Context, p auth.Principal, project, planID, version string) (api.PlanVersion, error)) (any, error) {
	project, err := projectQuery(r)
	if err != nil {
		return nil, err
	}
	return do(r.Context(), p, project, r.PathValue("planId"), r.PathValue("planVersion"))
}

// projectQuery reads the required ?projectId= of an endpoint under
// /v1/plans/{planId}/versions, the only query parameter it takes.
func projectQuery(r *http.Request) (string, error) {
	if err := checkQueryNames(r, "projectId"); err != nil {
		return "", err
	}
	return requiredProject(r)
}

// requiredProject reads the ?projectId= of an endpoint under
// /v1/plans/{planId}, refusing an empty one.
func requiredProject(r *http.Request) (string, error) {
	project := r.URL.Query().Get("projectId")
	if project == "" {
		return "", intake.Invalid("projectId", "is required: a plan is named within its project (?projectId=)")
	}
	return project, nil
}

// runStart starts the run req asks for, on every transport: a start by
// planRef is given the plan of the registered version it names
// (resolveRef) before intake checks and starts it, so the run's tuple,
// its idempotency and its RunApproved hold the resolved version.
func (s *Service) runStart(ctx context.Context, p auth.Principal, req api.StartRunRequest) (intake.RunResult, error) {
	if req.PlanRef != nil {
		var err error
		if req, err = s.resolveRef(ctx, p, req); err != nil {
			return intake.RunResult{}, err
		}
	}
	return s.intake.RunStart(ctx, p, req)
}

// resolveRef returns req with its planRef replaced by the plan it names,
// and its planId and planVersion, when left out, set to the resolved
// version's; a planId or planVersion given is held to the resolved
// plan's by intake. A start carrying both plan and planRef, or a planRef
// missing a member, is refused with InvalidArgument; an unknown version
// is NotFound and an archived one PlanArchived (registry.Resolve).
func (s *Service) resolveRef(ctx context.Context, p auth.Principal, req api.StartRunRequest) (api.StartRunRequest, error) {
	ref := *req.PlanRef
	var errs []error
	if doc := bytes.TrimSpace(req.Plan); len(doc) > 0 && !bytes.Equal(doc, []byte("null")) {
		errs = append(errs, intake.Invalid("planRef", "and plan are both given: a start carries its plan, or names a registered one, not both"))
	}
	for _, f := range []struct{ name, value string }{
		{"tenantId", req.TenantID}, {"projectId", req.ProjectID},
		{"planRef.planId", ref.PlanID}, {"planRef.planVersion", ref.PlanVersion},
	} {
		if f.value == "" {
			errs = append(errs, intake.Invalid(f.name, "must not be empty"))
		}
	}
	if err := intake.Join(errs...); err != nil {
		return req, err
	}
	v, err := s.plans.Resolve(ctx, p, req.TenantID, req.ProjectID, ref)
	if err != nil {
		return req, err
	}
	req.Plan, req.PlanRef = v.Plan, nil
	if req.PlanID == "" {
		req.PlanID = v.PlanID
	}
	if req.PlanVersion == "" {
		req.PlanVersion = v.PlanVersion
	}
	return req, nil
}
