package readapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// listQuery is a parsed GET /v1/runs.
type listQuery struct {
	tenant   string
	statuses []string // nil: any
	stale    bool     // STALE was among the statuses
	plan     string
	project  string // "": any project
	env      string // "": any environment
	trigger  string // "": any run; else the runs trigger started
	parent   string // "": any run; else the child runs of run parent
	limit    int
	after    *cursor
}

// cursor is the position after the last run of a page.
type cursor struct {
	CreatedAt time.Time `json:"t"`
	RunID     string    `json:"id"`
}

// runsListSQL lists a tenant's runs newest first, its %s standing for
// the filters that have an index of their own (listSQL): the trigger
// filter (triggerCond) and the parent filter (parentCond). The project and
// environment filters ($8, $9) have none: the list's index
// (run_snapshots_list, or the index of the trigger or parent filter)
// serves them, newest first, as it serves the list without them. ORDER BY
// names the table's run_id: a bare run_id would be the output column,
// run_id::text, which no index orders, so every page would sort all the
// runs that match.
const runsListSQL = `
SELECT run_id::text, tenant_id, project_id, environment_id, plan_id, plan_version, status,
       gap_seen_seq IS NOT NULL, created_at, (snapshot->>'startedAt')::timestamptz,
       (snapshot->>'completedAt')::timestamptz, (snapshot->>'totalDurationMs')::bigint,
       updated_at, last_event_seq, steps_total, steps_done, coalesce((snapshot->>'failedSteps')::int, 0),
       coalesce(run_request_id, ''), coalesce(parent_run_id::text, '')
FROM run_snapshots
WHERE tenant_id = $1
  AND ($2::text[] IS NULL OR status = ANY($2) OR ($3 AND gap_seen_seq IS NOT NULL))
  AND ($4 = '' OR plan_id = $4)
  AND ($8 = '' OR project_id = $8)
  AND ($9 = '' OR environment_id = $9)
  AND ($5::timestamptz IS NULL OR (created_at, run_id) < ($5, $6::uuid))
  %s
ORDER BY created_at DESC, run_snapshots.run_id DESC
LIMIT $7`

// triggerCond keeps the runs the trigger whose id is its placeholder's
// value started: those whose run request id is "{triggerId}:{eventId}".
// It is the predicate and the expression of the index
// run_snapshots_source (migration 0012), spelt as there so that the index
// serves the list newest first, pages included.
const triggerCond = `AND strpos(run_request_id, ':') > 0 AND split_part(run_request_id, ':', 1) = $%d`

// parentCond keeps the child runs of the run whose id is its
// placeholder's value, which the index run_snapshots_parent (migration
// 0020) serves newest first, pages included.
const parentCond = `AND parent_run_id = $%d::uuid`

// listSQL returns the query that lists q's page and its arguments: one
// more run than q.limit, which tells whether a next page has any.
func (q listQuery) listSQL() (string, []any) {
	var afterAt, afterID any
	if q.after != nil {
		afterAt, afterID = q.after.CreatedAt, q.after.RunID
	}
	args := []any{q.tenant, q.statuses, q.stale, q.plan, afterAt, afterID, q.limit + 1, q.project, q.env}
	var conds []string
	for _, f := range [...]struct{ cond, value string }{{triggerCond, q.trigger}, {parentCond, q.parent}} {
		if f.value != "" {
			args = append(args, f.value)
			conds = append(conds, fmt.Sprintf(f.cond, len(args)))
		}
	}
	return fmt.Sprintf(runsListSQL, strings.Join(conds, "\n  ")), args
}

// handleRunsList answers GET /v1/runs.
func (a *API) handleRunsList(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	q, err := parseList(r, p)
	if err != nil {
		status, code := http.StatusBadRequest, api.CodeInvalidArgument
		if errors.Is(err, errOtherTenant) {
			status, code = http.StatusForbidden, api.CodePermissionDenied
		}
		writeError(w, status, code, err.Error())
		return
	}
	list, err := a.runsList(r, q)
	if err != nil {
		a.writeFault(w, r, err)
		return
	}
	httpserve.WriteJSON(w, http.StatusOK, list)
}

func (a *API) runsList(r *http.Request, q listQuery) (api.RunList, error) {
	sql, args := q.listSQL()
	rows, err := a.read.Query(r.Context(), sql, args...)
	if err != nil {
		return api.RunList{}, fmt.Errorf("projector: list runs: %w", err)
	}
	runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (api.RunSummary, error) {
		var v api.RunSummary
		err := row.Scan(&v.RunID, &v.TenantID, &v.ProjectID, &v.EnvironmentID, &v.PlanID, &v.PlanVersion,
			&v.Status, &v.Stale, &v.CreatedAt, &v.StartedAt, &v.CompletedAt, &v.TotalDurationMs,
			&v.UpdatedAt, &v.LastEventSeq, &v.StepsTotal, &v.StepsDone, &v.FailedSteps, &v.RunRequestID, &v.ParentRunID)
		return v, err
	})
	if err != nil {
		return api.RunList{}, fmt.Errorf("projector: list runs: %w", err)
	}
	list := api.RunList{Runs: runs}
	if len(runs) > q.limit {
		list.Runs = runs[:q.limit]
		last := list.Runs[q.limit-1]
		list.NextCursor = encodeCursor(cursor{CreatedAt: last.CreatedAt, RunID: last.RunID})
	}
	return list, nil
}

var errOtherTenant = errors.New("tenant: a key reads only its own tenant's runs")

// parseList reads and checks the list's query parameters.
func parseList(r *http.Request, p auth.Principal) (listQuery, error) {
	v := r.URL.Query()
	q := listQuery{tenant: p.TenantID, plan: v.Get("plan"), trigger: v.Get("trigger"), parent: v.Get("parent"),
		project: v.Get("projectId"), env: v.Get("environmentId"), limit: DefaultListLimit}
	if t := v.Get("tenant"); t != "" && t != p.TenantID {
		return q, errOtherTenant
	}
	if err := checkFilterIDs(v); err != nil {
		return q, err
	}
	if v.Has("status") {
		q.statuses = []string{}
		for _, raw := range v["status"] {
			for st := range strings.SplitSeq(raw, ",") {
				if err := q.addStatus(strings.TrimSpace(st)); err != nil {
					return q, err
				}
			}
		}
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > MaxListLimit {
			return q, fmt.Errorf("limit %q: want 1 to %d", l, MaxListLimit)
		}
		q.limit = n
	}
	if c := v.Get("cursor"); c != "" {
		after, err := decodeCursor(c)
		if err != nil {
			return q, err
		}
		q.after = &after
	}
	return q, nil
}

// checkFilterIDs checks the ids the list's filters name: an empty project
// or environment id, a trigger id no trigger can have, and a parent that
// is not a run id are refused.
func checkFilterIDs(v url.Values) error {
	for _, name := range []string{"projectId", "environmentId"} {
		if v.Has(name) && v.Get(name) == "" {
			return fmt.Errorf("%s: want an id, not an empty one", name)
		}
	}
	if trigger := v.Get("trigger"); v.Has("trigger") && (trigger == "" || strings.Contains(trigger, ":")) {
		return fmt.Errorf("trigger %q: want a trigger id, which is not empty and holds no ':'", trigger)
	}
	if v.Has("parent") {
		if _, err := events.ParseRunID(v.Get("parent")); err != nil {
			return fmt.Errorf("parent %q: want a run id (a lowercase UUID)", v.Get("parent"))
		}
	}
	return nil
}

// RunStatuses are the statuses a run may have, in the order of its life:
// the values of the runs list's status filter, besides STALE.
var RunStatuses = []events.RunStatus{events.RunStatusPending, events.RunStatusApproved, events.RunStatusQueued,
	events.RunStatusRunning, events.RunStatusPaused, events.RunStatusCompleted, events.RunStatusFailed, events.RunStatusCancelled}

// statusChoices is what the status filter accepts, for its error.
var statusChoices = func() string {
	var b strings.Builder
	for _, st := range RunStatuses {
		b.WriteString(string(st) + ", ")
	}
	return b.String() + api.StatusStale
}()

func (q *listQuery) addStatus(st string) error {
	switch {
	case st == api.StatusStale:
		q.stale = true
	case slices.Contains(RunStatuses, events.RunStatus(st)):
		q.statuses = append(q.statuses, st)
	default:
		return fmt.Errorf("status %q: want one of %s", st, statusChoices)
	}
	return nil
}

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c) // a time and a string always encode
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.CreatedAt.IsZero() || c.RunID == "" {
		return cursor{}, errors.New("cursor: not a cursor this API returned")
	}
	return c, nil
}
