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
	version  string            // "": any version; else the runs of version version of plan
	project  string            // "": any project
	env      string            // "": any environment
	trigger  string            // "": any run; else the runs trigger started
	schedule string            // "": any run; else the runs schedule's fires started
	parent   string            // "": any run; else the child runs of run parent
	rerunOf  string            // "": any run; else the reruns of run rerunOf
	key      string            // "": any run; else the QUEUED runs a concurrency key of this name holds
	labels   map[string]string // nil: any run; else the runs that carry every one of them
	// created and ended bound the runs' creation and end times.
	created, ended timeRange
	limit          int
	after          *cursor
}

// timeRange is a half-open range of times, [from, to); a zero bound is
// none.
type timeRange struct{ from, to time.Time }

// cursor is the position after the last run of a page.
type cursor struct {
	CreatedAt time.Time `json:"t"`
	RunID     string    `json:"id"`
}

// runsListSQL lists a tenant's runs newest first, its %s standing for
// the filters that have an index of their own (listSQL): the trigger and
// schedule filters (triggerCond, scheduleCond), the parent, rerunOf,
// planVersion and label filters and the time ranges. The project and
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
       coalesce(run_request_id, ''), coalesce(parent_run_id::text, ''), coalesce(rerun_of::text, ''), labels
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

// scheduleCond keeps the runs the schedule whose id is its placeholder's
// value started: those whose run request id is that of one of its fires,
// "{scheduleId}:{scheduledFor}" with the fire time in RFC 3339 UTC to the
// second. run_snapshots_source serves it as it serves triggerCond.
const scheduleCond = triggerCond + `
  AND run_request_id ~ '^[^:]+:[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'`

// The other filters' conditions, each on its placeholder's value:
// parentCond, served newest first by run_snapshots_parent (migration
// 0020), rerunOfCond by run_snapshots_rerun_of and versionCond (with the
// plan) by run_snapshots_plan_version (migration 0021); labelsCond, one
// containment for every label, by the GIN index run_snapshots_labels;
// the ended range by run_snapshots_ended, the created range by the list's
// own index.
const (
	parentCond  = `AND parent_run_id = $%d::uuid`
	rerunOfCond = `AND rerun_of = $%d::uuid`
	versionCond = `AND plan_version = $%d`
	labelsCond  = `AND labels @> $%d::jsonb`
	// queuedKeyCond, served by run_snapshots_status: the tenant's QUEUED
	// runs, newest first, filtered by the key their snapshot names.
	queuedKeyCond     = `AND status = 'QUEUED' AND snapshot->'queued'->>'key' = $%d`
	createdFromCond   = `AND created_at >= $%d`
	createdBeforeCond = `AND created_at < $%d`
	endedFromCond     = `AND ended_at >= $%d`
	endedBeforeCond   = `AND ended_at < $%d`
)

// listSQL returns the query that lists q's page and its arguments: one
// more run than q.limit, which tells whether a next page has any.
func (q listQuery) listSQL() (string, []any) {
	var afterAt, afterID any
	if q.after != nil {
		afterAt, afterID = q.after.CreatedAt, q.after.RunID
	}
	args := []any{q.tenant, q.statuses, q.stale, q.plan, afterAt, afterID, q.limit + 1, q.project, q.env}
	var conds []string
	add := func(cond string, value any) {
		args = append(args, value)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
	}
	for _, f := range [...]struct{ cond, value string }{{triggerCond, q.trigger}, {scheduleCond, q.schedule},
		{parentCond, q.parent}, {rerunOfCond, q.rerunOf}, {versionCond, q.version}, {queuedKeyCond, q.key}} {
		if f.value != "" {
			add(f.cond, f.value)
		}
	}
	if len(q.labels) > 0 {
		doc, _ := json.Marshal(q.labels) // a map of strings always encodes
		add(labelsCond, string(doc))
	}
	for _, f := range [...]struct {
		cond string
		at   time.Time
	}{{createdFromCond, q.created.from}, {createdBeforeCond, q.created.to}, {endedFromCond, q.ended.from}, {endedBeforeCond, q.ended.to}} {
		if !f.at.IsZero() {
			add(f.cond, f.at)
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
			&v.UpdatedAt, &v.LastEventSeq, &v.StepsTotal, &v.StepsDone, &v.FailedSteps, &v.RunRequestID, &v.ParentRunID,
			&v.RerunOf, &v.Labels)
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
	q := listQuery{tenant: p.TenantID, plan: v.Get("plan"), version: v.Get("planVersion"), trigger: v.Get("trigger"),
		schedule: v.Get("schedule"), parent: v.Get("parent"), rerunOf: v.Get("rerunOf"), key: v.Get("queuedKey"),
		project: v.Get("projectId"), env: v.Get("environmentId"), limit: DefaultListLimit}
	if t := v.Get("tenant"); t != "" && t != p.TenantID {
		return q, errOtherTenant
	}
	if err := checkFilterIDs(v); err != nil {
		return q, err
	}
	if err := q.parseFilters(v); err != nil {
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
// or environment id, a trigger or schedule id none can have, and a parent
// or rerunOf that is not a run id are refused.
func checkFilterIDs(v url.Values) error {
	for _, name := range []string{"projectId", "environmentId"} {
		if v.Has(name) && v.Get(name) == "" {
			return fmt.Errorf("%s: want an id, not an empty one", name)
		}
	}
	for _, name := range []string{"trigger", "schedule"} {
		if id := v.Get(name); v.Has(name) && (id == "" || strings.Contains(id, ":")) {
			return fmt.Errorf("%s %q: want a %s id, which is not empty and holds no ':'", name, id, name)
		}
	}
	if k := v.Get("queuedKey"); v.Has("queuedKey") && (k == "" || len(k) > maxQueuedKeyBytes) {
		return fmt.Errorf("queuedKey: want a key as a queued run's names it (input.customerId = \"42\"), 1 to %d bytes", maxQueuedKeyBytes)
	}
	for _, name := range []string{"parent", "rerunOf"} {
		if v.Has(name) {
			if _, err := events.ParseRunID(v.Get(name)); err != nil {
				return fmt.Errorf("%s %q: want a run id (a lowercase UUID)", name, v.Get(name))
			}
		}
	}
	return nil
}

// maxQueuedKeyBytes bounds the queuedKey filter: a key's expression (4
// KiB at most) and its value (256 bytes), quoted.
const maxQueuedKeyBytes = 8 << 10

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
