package registry

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/store/planversions"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/page"
)

// Config tunes the registry. The zero value of each field means its
// default.
type Config struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ResolveTTL is how long a planRef's resolution is reused by later
	// starts of this gateway (resolveCache): a push, archive or restore
	// through another gateway is seen by this one's starts within it.
	// Zero means DefaultResolveTTL; negative resolves every start anew.
	ResolveTTL time.Duration
}

// Service keeps the registered plans: push, list, get, archive, restore,
// and the resolution of a start's planRef. Safe for concurrent use.
type Service struct {
	pool     *pgxpool.Pool
	intake   *intake.Intake
	authz    auth.Authorizer
	now      func() time.Time
	resolved resolveCache
}

// New returns the registry of pool, checking plans with in (as a start
// checks its plan) and deciding what callers may do with authz.
func New(pool *pgxpool.Pool, in *intake.Intake, authz auth.Authorizer, cfg Config) *Service {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	ttl := cfg.ResolveTTL
	if ttl == 0 {
		ttl = DefaultResolveTTL
	}
	return &Service{pool: pool, intake: in, authz: authz, now: now, resolved: resolveCache{ttl: ttl, now: now}}
}

// Push stores the plan version req carries for p, or refuses req with an
// *intake.Error before anything is stored: its plan is checked as a
// start's is (the same problems, paths from the body's plan field). A
// push of a stored version with the same plan (the same digest of the
// validated plan's canonical JSON) answers the stored version with
// created false; with another plan it is refused with
// CodePlanVersionConflict. Writing takes ActionRunStart in the tenant.
func (s *Service) Push(ctx context.Context, p auth.Principal, req api.PlanPushRequest) (v api.PlanVersion, created bool, err error) {
	tenant := cmp.Or(req.TenantID, p.TenantID)
	pl, err := s.checkPush(tenant, req)
	if err != nil {
		return api.PlanVersion{}, false, err
	}
	if err := s.authorize(ctx, p, auth.ActionRunStart, tenant); err != nil {
		return api.PlanVersion{}, false, err
	}
	k := planversions.Key{TenantID: tenant, ProjectID: req.ProjectID, PlanID: pl.PlanID(), PlanVersion: pl.PlanVersion()}
	sum := sha256.Sum256(intake.CanonicalJSON(pl.JSON()))
	r, err := planversions.Insert(ctx, s.pool, k, pl.JSON(), sum[:], s.stamp())
	if r != nil {
		s.resolved.forget(k)
	}
	if err != nil || r != nil {
		return versionOr(r), r != nil, err
	}
	if r, err = planversions.Get(ctx, s.pool, k); err != nil {
		return api.PlanVersion{}, false, err
	}
	if r == nil { // a version is never deleted: the conflicting row is there
		return api.PlanVersion{}, false, fmt.Errorf("registry: %s@%s conflicted and is not stored", k.PlanID, k.PlanVersion)
	}
	if !bytes.Equal(r.RawDigest, sum[:]) {
		return api.PlanVersion{}, false, versionConflict(k, r)
	}
	return r.PlanVersion, false, nil
}

// checkPush checks every field of a push in tenant and returns its plan
// validated, or the problems of all the fields at fault.
func (s *Service) checkPush(tenant string, req api.PlanPushRequest) (plan.Validated, error) {
	tenantErr := checkID("tenantId", tenant)
	projectErr := checkID("projectId", req.ProjectID)
	pl, planErr := s.intake.CheckPlan(req.Plan)
	var versionErr error
	if planErr == nil && pl.PlanVersion() == api.PlanVersionLatest {
		versionErr = intake.Invalid("plan.planVersion", "must not be %q: a planRef's %q names the newest version",
			api.PlanVersionLatest, api.PlanVersionLatest)
	}
	return pl, intake.Join(tenantErr, projectErr, planErr, versionErr)
}

// List returns a page of p's tenant's plan versions, of project unless it
// is empty, newest first, without their plans: limit of them (0 means
// page.DefaultLimit, at most page.MaxLimit) after the page cursor names
// ("" for the first page).
func (s *Service) List(ctx context.Context, p auth.Principal, project, cursor string, limit int) (api.PlanVersionList, error) {
	if err := s.authorize(ctx, p, auth.ActionRunRead, p.TenantID); err != nil {
		return api.PlanVersionList{}, err
	}
	before, limit, err := pageArgs(cursor, limit)
	if err != nil {
		return api.PlanVersionList{}, err
	}
	rs, err := planversions.List(ctx, s.pool, p.TenantID, project, before, limit+1)
	if err != nil {
		return api.PlanVersionList{}, err
	}
	rs, next := pageOf(rs, limit)
	return api.PlanVersionList{Versions: planversions.Versions(rs), NextCursor: next}, nil
}

// Get returns p's plan planID of project: a page of its versions, newest
// first, without their plans, limit of them (0 means page.DefaultLimit,
// at most page.MaxLimit) after the page cursor names ("" for the first
// page), and, on every page, the version "latest" names, which may be on
// another page. A plan without versions, or of another tenant, is
// NotFound; a bad cursor or limit is InvalidArgument, as List's.
func (s *Service) Get(ctx context.Context, p auth.Principal, project, planID, cursor string, limit int) (api.Plan, error) {
	if err := s.authorize(ctx, p, auth.ActionRunRead, p.TenantID); err != nil {
		return api.Plan{}, err
	}
	before, limit, err := pageArgs(cursor, limit)
	if err != nil {
		return api.Plan{}, err
	}
	k := planversions.Key{TenantID: p.TenantID, ProjectID: project, PlanID: planID}
	rs, err := planversions.OfPlanBefore(ctx, s.pool, k, before, limit+1)
	if err == nil && len(rs) == 0 {
		err = s.requireVersions(ctx, k, before)
	}
	if err != nil {
		return api.Plan{}, err
	}
	rs, next := pageOf(rs, limit)
	latest, err := s.latest(ctx, k, rs, before == 0)
	if err != nil {
		return api.Plan{}, err
	}
	return api.Plan{TenantID: k.TenantID, ProjectID: project, PlanID: planID, Latest: latest,
		Versions: planversions.Versions(rs), NextCursor: next}, nil
}

// requireVersions refuses as NotFound k's plan, whose page of versions
// before the version of seq before is empty, if it has no version at
// all: an empty first page says so, a later one (a cursor past the
// oldest version) is read again from the newest.
func (s *Service) requireVersions(ctx context.Context, k planversions.Key, before int64) error {
	if before != 0 {
		rs, err := planversions.OfPlanBefore(ctx, s.pool, k, 0, 1)
		if err != nil || len(rs) > 0 {
			return err
		}
	}
	return notFound(k)
}

// latest is the version "latest" of k's plan names, "" when every
// version is archived: the first not archived of rs when rs is the first
// page of its versions, else the newest not archived read again.
func (s *Service) latest(ctx context.Context, k planversions.Key, rs []planversions.Record, firstPage bool) (string, error) {
	if firstPage {
		for _, r := range rs {
			if r.ArchivedAt == nil {
				return r.PlanVersion.PlanVersion, nil
			}
		}
	}
	r, err := planversions.Latest(ctx, s.pool, k)
	if err != nil || r == nil {
		return "", err
	}
	return r.PlanVersion.PlanVersion, nil
}

// pageArgs checks a page request of the registry's lists (page.Args): it
// returns the seq of the version the page starts before (0 for the
// first page) and the page size.
func pageArgs(cursor string, limit int) (before int64, n int, err error) {
	after, n, err := page.Args(cursor, limit)
	if err != nil || after == "" {
		return 0, n, err
	}
	if before, err = strconv.ParseInt(after, 10, 64); err != nil || before < 1 {
		return 0, 0, intake.Invalid("cursor", "is not a cursor this API gave out")
	}
	return before, n, nil
}

// pageOf cuts rs, read with a limit of limit+1, to a page of limit and
// returns the cursor of the next page, "" when rs was the last.
func pageOf(rs []planversions.Record, limit int) ([]planversions.Record, string) {
	if len(rs) <= limit {
		return rs, ""
	}
	return rs[:limit], page.Cursor(strconv.FormatInt(rs[limit-1].Seq, 10))
}

// VersionGet returns p's plan version planID@version of project with its
// plan, or NotFound.
func (s *Service) VersionGet(ctx context.Context, p auth.Principal, project, planID, version string) (api.PlanVersion, error) {
	if err := s.authorize(ctx, p, auth.ActionRunRead, p.TenantID); err != nil {
		return api.PlanVersion{}, err
	}
	k := planversions.Key{TenantID: p.TenantID, ProjectID: project, PlanID: planID, PlanVersion: version}
	r, err := planversions.Get(ctx, s.pool, k)
	if err != nil || r == nil {
		return api.PlanVersion{}, cmpErr(err, notFound(k))
	}
	return r.PlanVersion, nil
}

// Archive archives p's plan version planID@version of project and
// returns it: new starts by planRef are refused with CodePlanArchived and
// "latest" passes over it; runs started are untouched. Archiving an
// archived version changes nothing.
func (s *Service) Archive(ctx context.Context, p auth.Principal, project, planID, version string) (api.PlanVersion, error) {
	now := s.stamp()
	return s.setArchived(ctx, p, planversions.Key{TenantID: p.TenantID, ProjectID: project, PlanID: planID, PlanVersion: version}, &now)
}

// Restore lets p's archived plan version planID@version of project be
// started again and returns it. Restoring a version not archived changes
// nothing.
func (s *Service) Restore(ctx context.Context, p auth.Principal, project, planID, version string) (api.PlanVersion, error) {
	return s.setArchived(ctx, p, planversions.Key{TenantID: p.TenantID, ProjectID: project, PlanID: planID, PlanVersion: version}, nil)
}

func (s *Service) setArchived(ctx context.Context, p auth.Principal, k planversions.Key, at *time.Time) (api.PlanVersion, error) {
	if err := s.authorize(ctx, p, auth.ActionRunStart, p.TenantID); err != nil {
		return api.PlanVersion{}, err
	}
	r, err := planversions.SetArchived(ctx, s.pool, k, at)
	s.resolved.forget(k)
	if err != nil || r == nil {
		return api.PlanVersion{}, cmpErr(err, notFound(k))
	}
	return r.PlanVersion, nil
}

// stamp is the clock in UTC at Postgres's microsecond precision.
func (s *Service) stamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// authorize asks authz whether p may do a in tenant.
func (s *Service) authorize(ctx context.Context, p auth.Principal, a auth.Action, tenant string) error {
	if d := s.authz.Authorize(ctx, p, a, auth.Resource{TenantID: tenant}); !d.Allowed {
		return intake.Denied(p, tenant, d)
	}
	return nil
}

// checkID refuses an empty or malformed id of field.
func checkID(field, id string) error {
	if id == "" {
		return intake.Invalid(field, "must not be empty")
	}
	if err := plan.CheckID(id, 0); err != nil {
		return intake.Invalid(field, "%v", err)
	}
	return nil
}

// versionOr is r's version, the zero one for nil.
func versionOr(r *planversions.Record) api.PlanVersion {
	if r == nil {
		return api.PlanVersion{}
	}
	return r.PlanVersion
}

// cmpErr returns err when it is set and fallback otherwise.
func cmpErr(err error, fallback *intake.Error) error {
	if err != nil {
		return err
	}
	return fallback
}
