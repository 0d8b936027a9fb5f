package gateway

import (
	"net/http"
	"strconv"

	"github.com/weftrun/weft/internal/auth"
	"github.com/weftrun/weft/internal/httpserve"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/page"
)

// The REST endpoints of schedules (docs/schedules.md). Each answers in the
// REST error shape; a schedule of another tenant is NotFound.

func (s *Service) handleScheduleCreate(w http.ResponseWriter, r *http.Request) {
	p, body, err := s.admit(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req api.ScheduleRequest
	if err := decode(body, &req, s.cfg.MaxDepth, "request body"); err != nil {
		s.writeError(w, r, err)
		return
	}
	sch, created, err := s.schedules.Create(r.Context(), p, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	httpserve.WriteJSON(w, createdStatus(created), sch)
}

func (s *Service) handleScheduleUpdate(w http.ResponseWriter, r *http.Request) {
	p, body, err := s.admit(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req api.ScheduleRequest
	if err := decode(body, &req, s.cfg.MaxDepth, "request body"); err != nil {
		s.writeError(w, r, err)
		return
	}
	sch, err := s.schedules.Update(r.Context(), p, r.PathValue("scheduleId"), req)
	s.answer(w, r, sch, err)
}

func (s *Service) handleScheduleGet(w http.ResponseWriter, r *http.Request) {
	p, err := s.authenticate(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sch, err := s.schedules.Get(r.Context(), p, r.PathValue("scheduleId"))
	s.answer(w, r, sch, err)
}

func (s *Service) handleScheduleList(w http.ResponseWriter, r *http.Request) {
	p, err := s.authenticate(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cursor, limit, err := pageQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := s.schedules.List(r.Context(), p, cursor, limit)
	s.answer(w, r, list, err)
}

func (s *Service) handleScheduleDelete(w http.ResponseWriter, r *http.Request) {
	p, err := s.authenticate(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.schedules.Delete(r.Context(), p, r.PathValue("scheduleId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) handleSchedulePause(w http.ResponseWriter, r *http.Request) {
	p, err := s.admitEmpty(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sch, err := s.schedules.Pause(r.Context(), p, r.PathValue("scheduleId"))
	s.answer(w, r, sch, err)
}

func (s *Service) handleScheduleResume(w http.ResponseWriter, r *http.Request) {
	p, err := s.admitEmpty(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sch, err := s.schedules.Resume(r.Context(), p, r.PathValue("scheduleId"))
	s.answer(w, r, sch, err)
}

// answer writes res with 200, or err.
func (s *Service) answer(w http.ResponseWriter, r *http.Request, res any, err error) {
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	httpserve.WriteJSON(w, http.StatusOK, res)
}

// authenticate authenticates a request that carries no body.
func (s *Service) authenticate(r *http.Request) (auth.Principal, error) {
	p, err := s.cfg.Keys.Authenticate(r.Header.Get("Authorization"))
	if err != nil {
		return auth.Principal{}, &intake.Error{Code: api.CodeUnauthenticated, Message: err.Error()}
	}
	return p, nil
}

// admitEmpty authenticates an action that takes no parameters: its body
// must be empty or the empty JSON object.
func (s *Service) admitEmpty(r *http.Request) (auth.Principal, error) {
	p, err := s.authenticate(r)
	if err != nil {
		return p, err
	}
	body, err := s.readBody(r)
	if err != nil || len(body) == 0 {
		return p, err
	}
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return p, err
	}
	var none struct{}
	return p, decode(body, &none, s.cfg.MaxDepth, "request body")
}

// pageQuery reads a list's ?limit= and ?cursor=.
func pageQuery(r *http.Request) (string, int, error) {
	q := r.URL.Query()
	for name := range q {
		if name != "limit" && name != "cursor" {
			return "", 0, intake.Invalid(name, "is not a query parameter of this list (limit, cursor)")
		}
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > page.MaxLimit {
			return "", 0, intake.Invalid("limit", "must be a whole number from 1 to %d, not %q", page.MaxLimit, v)
		}
		limit = n
	}
	return q.Get("cursor"), limit, nil
}

// createdStatus is 201 for a new resource, 200 for a create that found it.
func createdStatus(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}
