package readapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
)

// handleRunEvents answers GET /v1/runs/{runId}/events from the event log.
func (a *API) handleRunEvents(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	runID, ok := runIDOf(w, r)
	if !ok {
		return
	}
	after, limit, err := parsePage(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, api.CodeInvalidArgument, err.Error())
		return
	}
	if !a.runVisible(w, r, runID, p) {
		return
	}
	evs, err := a.readLog.EventsFetchAfter(r.Context(), runID, after, limit+1)
	if err != nil {
		a.writeFault(w, r, err)
		return
	}
	page := api.EventPage{Events: evs, NextAfterSeq: after}
	if len(evs) > limit {
		page.Events, page.More = evs[:limit], true
	}
	if n := len(page.Events); n > 0 {
		page.NextAfterSeq = page.Events[n-1].RunSeq
	}
	httpserve.WriteJSON(w, http.StatusOK, page)
}

func parsePage(r *http.Request) (after int64, limit int, err error) {
	q := r.URL.Query()
	limit = DefaultEventsLimit
	if a := q.Get("afterSeq"); a != "" {
		if after, err = strconv.ParseInt(a, 10, 64); err != nil || after < 0 {
			return 0, 0, fmt.Errorf("afterSeq %q: want a whole number >= 0", a)
		}
	}
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > MaxEventsLimit {
			return 0, 0, fmt.Errorf("limit %q: want 1 to %d", l, MaxEventsLimit)
		}
	}
	return after, limit, nil
}

// Alert is one active alert of GET /v1/alerts.
type Alert struct {
	Code     string    `json:"code"`
	Severity string    `json:"severity"`
	RunID    string    `json:"runId,omitempty"`
	Message  string    `json:"message"`
	RaisedAt time.Time `json:"raisedAt"`
}

// handleAlerts answers GET /v1/alerts: the alerts of the key's tenant's
// runs and those of no run, newest first.
func (a *API) handleAlerts(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	rows, err := a.read.Query(r.Context(), `
SELECT code, severity, coalesce(run_id::text, ''), message, raised_at FROM projector_alerts
WHERE tenant_id = $1 OR run_id IS NULL ORDER BY raised_at DESC, alert_key LIMIT 1000`, p.TenantID)
	if err != nil {
		a.writeFault(w, r, err)
		return
	}
	alerts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Alert])
	if err != nil {
		a.writeFault(w, r, err)
		return
	}
	httpserve.WriteJSON(w, http.StatusOK, map[string][]Alert{"alerts": alerts})
}
