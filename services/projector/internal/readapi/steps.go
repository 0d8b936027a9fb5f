package readapi

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
func (a *API) handleStepGet(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	runID, ok := runIDOf(w, r)
	if !ok || !a.runVisible(w, r, runID, p) {
		return
	}
	stepID := r.PathValue("stepId")
	evs, err := a.readLog.EventsFetchStep(r.Context(), runID, stepID, MaxStepEvents)
	if err != nil {
		a.writeFault(w, r, fmt.Errorf("projector: read events of step %s: %w", stepID, err))
		return
	}
	details, err := events.StepDetails(evs)
	if err != nil {
		a.writeFault(w, r, err)
		return
	}
	d := details[stepID]
	if d == nil {
		d = &events.StepDetail{StepID: stepID, Attempts: []events.StepAttempt{}}
	}
	httpserve.WriteJSON(w, http.StatusOK, d)
}

// DefaultChildrenLimit is the page size of GET
// /v1/runs/{runId}/steps/{stepId}/children without a limit (at most
// Config.MaxChildrenPage).
const DefaultChildrenLimit = 100

// handleStepChildren answers GET /v1/runs/{runId}/steps/{stepId}/children
// from the run's snapshot (afterIndex, default -1; limit, 1 to
// Config.MaxChildrenPage, default DefaultChildrenLimit). A page of more
// than Config.StepsPerToken children costs its key more of its rate
// (chargeSteps).
func (a *API) handleStepChildren(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	runID, ok := runIDOf(w, r)
	if !ok {
		return
	}
	after, limit, ferr := a.parseChildPage(r)
	if ferr != nil {
		writeFieldError(w, ferr)
		return
	}
	v, err := a.runView(r, runID, p.TenantID)
	if !a.runFound(w, r, runID, err) {
		return
	}
	page := childPage(v.RunSnapshot, r.PathValue("stepId"), after, limit)
	if !a.chargeSteps(w, r, p, len(page.Children)) {
		return
	}
	httpserve.WriteJSON(w, http.StatusOK, page)
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

// fieldError is a query parameter's bad value.
type fieldError struct {
	field, msg string
}

// writeFieldError answers 400 InvalidArgument for e, with details.field
// naming its parameter.
func writeFieldError(w http.ResponseWriter, e *fieldError) {
	httpserve.WriteJSON(w, http.StatusBadRequest, api.ErrorBody{Error: api.Error{
		Code: api.CodeInvalidArgument, Message: e.msg, Details: map[string]any{"field": e.field}}})
}

// parseChildPage reads afterIndex and limit.
func (a *API) parseChildPage(r *http.Request) (after, limit int, _ *fieldError) {
	q := r.URL.Query()
	after, limit = -1, min(DefaultChildrenLimit, a.cfg.MaxChildrenPage)
	var err error
	if ai := q.Get("afterIndex"); ai != "" {
		if after, err = strconv.Atoi(ai); err != nil || after < -1 {
			return 0, 0, &fieldError{"afterIndex", fmt.Sprintf("afterIndex %q: want an element index, or -1", ai)}
		}
	}
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > a.cfg.MaxChildrenPage {
			return 0, 0, &fieldError{"limit", fmt.Sprintf("limit %q: want 1 to %d", l, a.cfg.MaxChildrenPage)}
		}
	}
	return after, limit, nil
}

// runVisible reports whether run runID exists in the caller's tenant, and
// answers 404 (another tenant's run is no run at all) or 500 when it does
// not say yes.
func (a *API) runVisible(w http.ResponseWriter, r *http.Request, runID string, p auth.Principal) bool {
	var tenant string
	err := a.read.QueryRow(r.Context(), `SELECT tenant_id FROM run_snapshots WHERE run_id = $1`, runID).Scan(&tenant)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && tenant != p.TenantID) {
		writeError(w, http.StatusNotFound, api.CodeNotFound, "no run "+runID)
		return false
	}
	if err != nil {
		a.writeFault(w, r, err)
		return false
	}
	return true
}
