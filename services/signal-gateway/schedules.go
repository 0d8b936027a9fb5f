package gateway

import (
	"context"
	"net/http"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
)

// The REST endpoints of schedules (docs/schedules.md), served through
// rest: each answers in the REST error shape; a schedule of another
// tenant is NotFound.

func (s *Service) restScheduleCreate(r *http.Request, p auth.Principal) (any, error) {
	req, err := bodyOf[api.ScheduleRequest](s, r)
	if err != nil {
		return nil, err
	}
	sch, created, err := s.schedules.Create(r.Context(), p, req)
	return reply{createdStatus(created), sch}, err
}

func (s *Service) restScheduleUpdate(r *http.Request, p auth.Principal) (any, error) {
	req, err := bodyOf[api.ScheduleRequest](s, r)
	if err != nil {
		return nil, err
	}
	return s.schedules.Update(r.Context(), p, r.PathValue("scheduleId"), req)
}

func (s *Service) restScheduleGet(r *http.Request, p auth.Principal) (any, error) {
	return s.schedules.Get(r.Context(), p, r.PathValue("scheduleId"))
}

func (s *Service) restScheduleList(r *http.Request, p auth.Principal) (any, error) {
	cursor, limit, err := pageQuery(r)
	if err != nil {
		return nil, err
	}
	return s.schedules.List(r.Context(), p, cursor, limit)
}

func (s *Service) restScheduleDelete(r *http.Request, p auth.Principal) (any, error) {
	return reply{status: http.StatusNoContent}, s.schedules.Delete(r.Context(), p, r.PathValue("scheduleId"))
}

func (s *Service) restSchedulePause(r *http.Request, p auth.Principal) (any, error) {
	return s.schedules.Pause(r.Context(), p, r.PathValue("scheduleId"))
}

func (s *Service) restScheduleResume(r *http.Request, p auth.Principal) (any, error) {
	return s.schedules.Resume(r.Context(), p, r.PathValue("scheduleId"))
}

// planResolver resolves the planRef of a schedule's fire or a trigger's
// event as it resolves a start's (resolveRef), so the three share one
// resolution and its refusals.
type planResolver struct{ s *Service }

// ResolvePlan returns req with the plan its planRef names, as p may
// start it.
func (r planResolver) ResolvePlan(ctx context.Context, p auth.Principal, req api.StartRunRequest) (api.StartRunRequest, error) {
	return r.s.resolveRef(ctx, p, req)
}
