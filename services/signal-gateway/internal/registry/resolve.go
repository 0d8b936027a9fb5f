package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/store/planversions"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// Resolve returns, with its plan, the version ref names of tenant's
// project, for a start of p that names it: "latest" is the newest not
// archived (planversions.Resolve). p must be allowed ActionRunStart in
// tenant before anything is read, so that a caller of another tenant
// learns nothing of its plans. An unknown version, or a plan without
// versions, is NotFound; an archived version, or "latest" of a plan whose
// every version is archived, is refused with CodePlanArchived. A
// resolution is reused for Config.ResolveTTL (resolveCache); a refusal is
// not.
func (s *Service) Resolve(ctx context.Context, p auth.Principal, tenant, project string, ref api.PlanRef) (api.PlanVersion, error) {
	if err := s.authorize(ctx, p, auth.ActionRunStart, tenant); err != nil {
		return api.PlanVersion{}, err
	}
	k := planversions.Key{TenantID: tenant, ProjectID: project, PlanID: ref.PlanID, PlanVersion: ref.PlanVersion}
	if v, ok := s.resolved.get(k); ok {
		return v, nil
	}
	r, err := planversions.Resolve(ctx, s.pool, k)
	if archived, ok := errors.AsType[*planversions.ArchivedError](err); ok {
		if archived.AllArchived {
			return api.PlanVersion{}, archivedErr(k, "has no version that is not archived: restore one, or push a new one")
		}
		return api.PlanVersion{}, archivedErr(k, "is archived: restore it, or start another version")
	}
	if errors.Is(err, planversions.ErrNotFound) {
		return api.PlanVersion{}, notFound(k)
	}
	if err != nil {
		return api.PlanVersion{}, err
	}
	s.resolved.put(k, r.PlanVersion)
	return r.PlanVersion, nil
}

// notFound answers a plan or version that does not exist or belongs to
// another tenant; the two are indistinguishable.
func notFound(k planversions.Key) *intake.Error {
	details := map[string]any{"projectId": k.ProjectID, "planId": k.PlanID}
	what := fmt.Sprintf("plan %s", k.PlanID)
	if k.PlanVersion != "" {
		details["planVersion"] = k.PlanVersion
		what += "@" + k.PlanVersion
	}
	return &intake.Error{Code: api.CodeNotFound, Details: details,
		Message: fmt.Sprintf("%s not found in project %s: push it first (POST /v1/plans)", what, k.ProjectID)}
}

// archivedErr refuses a start of k, which is archived as says says.
func archivedErr(k planversions.Key, says string) *intake.Error {
	what := k.PlanID + "@" + k.PlanVersion
	if k.PlanVersion == api.PlanVersionLatest {
		what = "plan " + k.PlanID
	}
	return &intake.Error{Code: api.CodePlanArchived,
		Message: fmt.Sprintf("%s %s", what, says),
		Details: map[string]any{"projectId": k.ProjectID, "planId": k.PlanID, "planVersion": k.PlanVersion}}
}

// versionConflict refuses a push of k with another plan than r, the
// stored version.
func versionConflict(k planversions.Key, r *planversions.Record) *intake.Error {
	return &intake.Error{Code: api.CodePlanVersionConflict,
		Message: fmt.Sprintf("%s@%s is registered with another plan (%s): versions are immutable; push the change under a new planVersion",
			k.PlanID, k.PlanVersion, r.Digest),
		Details: map[string]any{"projectId": k.ProjectID, "planId": k.PlanID, "planVersion": k.PlanVersion, "digest": r.Digest}}
}
