package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/page"
)

// Create stores a new schedule for p, or refuses req with an
// *intake.Error before anything is stored. An empty ScheduleID is given a
// fresh UUIDv7. A create that repeats an existing scheduleId with the same
// definition answers that schedule with created false and changes
// nothing; with another definition it is refused with CodeAlreadyExists.
// The first fire time is the first after now. A new schedule past the
// tenant's quota (Config.MaxPerTenant) is refused with CodeQuotaExceeded
// and nothing is stored.
func (s *Service) Create(ctx context.Context, p auth.Principal, req api.ScheduleRequest) (sch api.Schedule, created bool, err error) {
	if req.ScheduleID == "" {
		req.ScheduleID = events.NewRunID()
	}
	sch, c, err := s.check(ctx, p, req)
	if err != nil {
		return api.Schedule{}, false, err
	}
	now := s.now()
	sch.NextFireAt = nextAfter(c, now)
	sch.Paused = req.Paused != nil && *req.Paused
	sch.CreatedAt, sch.UpdatedAt, sch.RecentSkips = now, now, []api.SkippedFires{}
	k := Key{sch.TenantID, sch.ScheduleID}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.quota().LockTx(ctx, tx, sch.TenantID); err != nil {
			return err
		}
		if created, err = recordInsertTx(ctx, tx, sch); err != nil {
			return err
		}
		if created {
			if err := s.quota().CheckTx(ctx, tx, sch.TenantID); err != nil {
				return err
			}
		} else {
			same, err := sameDefinitionTx(ctx, tx, k, sch)
			if err != nil {
				return err
			}
			if !same {
				return &intake.Error{Code: api.CodeAlreadyExists, Details: map[string]any{"scheduleId": k.ScheduleID},
					Message: fmt.Sprintf("schedule %s exists with another definition: update it (PUT) or delete it first", k.ScheduleID)}
			}
		}
		r, err := recordGet(ctx, tx, k, false) // as stored, so every answer is the same
		if err == nil && r != nil {
			sch = r.Schedule
		}
		return err
	})
	if err != nil {
		return api.Schedule{}, false, err
	}
	return sch, created, nil
}

// Update replaces the definition of p's schedule id with req, or refuses
// with an *intake.Error (NotFound for an unknown schedule). A new cron
// expression or timezone moves the next fire time to the first after now;
// otherwise the schedule keeps its next fire time, its last run and its
// buffered fire. req.Paused, when set, pauses or resumes it.
func (s *Service) Update(ctx context.Context, p auth.Principal, id string, req api.ScheduleRequest) (api.Schedule, error) {
	if req.ScheduleID != "" && req.ScheduleID != id {
		return api.Schedule{}, intake.Invalid("scheduleId", "%q is not the path's %q", req.ScheduleID, id)
	}
	req.ScheduleID = id
	sch, c, err := s.check(ctx, p, req)
	if err != nil {
		return api.Schedule{}, err
	}
	now := s.now()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		old, err := recordGet(ctx, tx, Key{sch.TenantID, id}, true)
		if err != nil || old == nil {
			return cmpErr(err, notFound(id))
		}
		sch.NextFireAt, sch.Paused = old.NextFireAt, old.Paused
		if old.Cron != sch.Cron || old.Timezone != sch.Timezone {
			sch.NextFireAt = nextAfter(c, now)
		}
		if req.Paused != nil {
			sch.Paused = *req.Paused
		}
		sch.UpdatedAt = now
		if err := recordUpdateTx(ctx, tx, sch); err != nil {
			return err
		}
		r, err := recordGet(ctx, tx, Key{sch.TenantID, id}, false)
		if err == nil && r != nil {
			sch = r.Schedule
		}
		return err
	})
	return sch, err
}

// Get returns p's schedule id, or NotFound.
func (s *Service) Get(ctx context.Context, p auth.Principal, id string) (api.Schedule, error) {
	if err := s.authorize(ctx, p, auth.ActionRunRead, p.TenantID); err != nil {
		return api.Schedule{}, err
	}
	r, err := recordGet(ctx, s.pool, Key{p.TenantID, id}, false)
	if err != nil || r == nil {
		return api.Schedule{}, cmpErr(err, notFound(id))
	}
	return r.Schedule, nil
}

// List returns a page of p's tenant's schedules in scheduleId order,
// without their plans and inputs: limit of them (0 means
// page.DefaultLimit, at most page.MaxLimit) after the page cursor names
// ("" for the first page).
func (s *Service) List(ctx context.Context, p auth.Principal, cursor string, limit int) (api.ScheduleList, error) {
	if err := s.authorize(ctx, p, auth.ActionRunRead, p.TenantID); err != nil {
		return api.ScheduleList{}, err
	}
	after, limit, err := page.Args(cursor, limit)
	if err != nil {
		return api.ScheduleList{}, err
	}
	list, err := recordList(ctx, s.pool, p.TenantID, after, limit+1)
	if err != nil {
		return api.ScheduleList{}, err
	}
	out := api.ScheduleList{Schedules: list}
	if len(list) > limit {
		out.Schedules = list[:limit]
		out.NextCursor = page.Cursor(list[limit-1].ScheduleID)
	}
	return out, nil
}

// Pause stops p's schedule id from firing until Resume, and returns it.
// Pausing a paused schedule changes nothing.
func (s *Service) Pause(ctx context.Context, p auth.Principal, id string) (api.Schedule, error) {
	return s.setPaused(ctx, p, id, true)
}

// Resume lets p's schedule id fire again and returns it. The fire times
// that passed while it was paused are misfires: its misfire policy
// decides what becomes of them at the next poll.
func (s *Service) Resume(ctx context.Context, p auth.Principal, id string) (api.Schedule, error) {
	return s.setPaused(ctx, p, id, false)
}

func (s *Service) setPaused(ctx context.Context, p auth.Principal, id string, paused bool) (api.Schedule, error) {
	if err := s.authorize(ctx, p, auth.ActionRunStart, p.TenantID); err != nil {
		return api.Schedule{}, err
	}
	r, err := recordSetPaused(ctx, s.pool, Key{p.TenantID, id}, paused, s.now())
	if err != nil || r == nil {
		return api.Schedule{}, cmpErr(err, notFound(id))
	}
	return r.Schedule, nil
}

// Delete removes p's schedule id, or answers NotFound. Its runs go on.
func (s *Service) Delete(ctx context.Context, p auth.Principal, id string) error {
	if err := s.authorize(ctx, p, auth.ActionRunStart, p.TenantID); err != nil {
		return err
	}
	found, err := recordDelete(ctx, s.pool, Key{p.TenantID, id})
	if err != nil || !found {
		return cmpErr(err, notFound(id))
	}
	return nil
}

// authorize asks authz whether p may do a in tenant.
func (s *Service) authorize(ctx context.Context, p auth.Principal, a auth.Action, tenant string) error {
	if d := s.authz.Authorize(ctx, p, a, auth.Resource{TenantID: tenant}); !d.Allowed {
		return intake.Denied(p, tenant, d)
	}
	return nil
}

// nextAfter is c's first fire time after now, nil when it has none.
func nextAfter(c Cron, now time.Time) *time.Time {
	if next := c.Next(now); !next.IsZero() {
		return &next
	}
	return nil
}

// notFound answers a schedule that does not exist or belongs to another
// tenant; the two are indistinguishable.
func notFound(id string) *intake.Error {
	return &intake.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("schedule %s not found", id),
		Details: map[string]any{"scheduleId": id}}
}

// cmpErr returns err when it is set and fallback otherwise.
func cmpErr(err error, fallback *intake.Error) error {
	if err != nil {
		return err
	}
	return fallback
}

// errAs reports whether err is a refusal.
func errAs(err error) (*intake.Error, bool) { return errors.AsType[*intake.Error](err) }

// quota is the tenant's quota of schedules (Config.MaxPerTenant).
func (s *Service) quota() intake.Quota {
	return intake.Quota{Table: "schedules", Limit: intake.LimitScheduleQuota, Max: s.cfg.MaxPerTenant}
}
