package projector

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// MaxStepEvents caps the events GET /v1/runs/{runId}/steps/{stepId} reads
// of one step: far more than any retry policy makes, so that a corrupt log
// cannot make one answer unbounded. A step's children are steps of their
// own, so a forEach step reads only its own events.
const MaxStepEvents = 10_000

// handleStepGet answers GET /v1/runs/{runId}/steps/{stepId}: the step's
// events.StepDetail (its input, output, skip reason and attempt history),
// read from the event log (eventlog.Store.EventsFetchStep: the step's
// events and the run's RunApproved and RunCancelled). A step with no event
// yet has no attempts.
func (s *Service) handleStepGet(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	runID, ok := runIDOf(w, r)
	if !ok || !s.runVisible(w, r, runID, p) {
		return
	}
	stepID := r.PathValue("stepId")
	evs, err := s.readLog.EventsFetchStep(r.Context(), runID, stepID, MaxStepEvents)
	if err != nil {
		s.writeFault(w, r, fmt.Errorf("projector: read events of step %s: %w", stepID, err))
		return
	}
	details, err := events.StepDetails(evs)
	if err != nil {
		s.writeFault(w, r, err)
		return
	}
	d := details[stepID]
	if d == nil {
		d = &events.StepDetail{StepID: stepID, Attempts: []events.StepAttempt{}}
	}
	httpserve.WriteJSON(w, http.StatusOK, d)
}

// DefaultChildrenLimit and MaxChildrenLimit bound a page of GET
// /v1/runs/{runId}/steps/{stepId}/children; the largest page holds every
// child a forEach step may have (plan.MaxForEachElements).
const (
	DefaultChildrenLimit = 100
	MaxChildrenLimit     = 10_000
)

// handleStepChildren answers GET /v1/runs/{runId}/steps/{stepId}/children
// from the run's snapshot (afterIndex, default -1; limit, default
// DefaultChildrenLimit).
func (s *Service) handleStepChildren(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	runID, ok := runIDOf(w, r)
	if !ok {
		return
	}
	after, limit, err := parseChildPage(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, api.CodeInvalidArgument, err.Error())
		return
	}
	v, err := s.runView(r, runID, p.TenantID)
	if !s.runFound(w, r, runID, err) {
		return
	}
	httpserve.WriteJSON(w, http.StatusOK, childPage(v.RunSnapshot, r.PathValue("stepId"), after, limit))
}

// childPage picks the page of parent's children from the snapshot.
func childPage(snap events.RunSnapshot, parent string, after, limit int) api.ChildPage {
	kids := snap.Children(parent, after)
	page := api.ChildPage{Children: kids[:min(limit, len(kids))], More: len(kids) > limit, NextAfterIndex: after}
	if n := len(page.Children); n > 0 {
		_, page.NextAfterIndex, _ = events.ParseChildStepID(page.Children[n-1].StepID)
	}
	return page
}

// parseChildPage reads afterIndex and limit.
func parseChildPage(r *http.Request) (after, limit int, err error) {
	q := r.URL.Query()
	after, limit = -1, DefaultChildrenLimit
	if a := q.Get("afterIndex"); a != "" {
		if after, err = strconv.Atoi(a); err != nil || after < -1 {
			return 0, 0, fmt.Errorf("afterIndex %q: want an element index, or -1", a)
		}
	}
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > MaxChildrenLimit {
			return 0, 0, fmt.Errorf("limit %q: want 1 to %d", l, MaxChildrenLimit)
		}
	}
	return after, limit, nil
}

// runVisible reports whether run runID exists in the caller's tenant, and
// answers 404 (another tenant's run is no run at all) or 500 when it does
// not say yes.
func (s *Service) runVisible(w http.ResponseWriter, r *http.Request, runID string, p auth.Principal) bool {
	var tenant string
	err := s.read.QueryRow(r.Context(), `SELECT tenant_id FROM run_snapshots WHERE run_id = $1`, runID).Scan(&tenant)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && tenant != p.TenantID) {
		writeError(w, http.StatusNotFound, api.CodeNotFound, "no run "+runID)
		return false
	}
	if err != nil {
		s.writeFault(w, r, err)
		return false
	}
	return true
}
