package ui_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// This file is a fake of the projector's read API (docs/read-api.md) and of
// the gateway route it forwards, enough to drive the UI: the runs list with
// its filters (parent=, label=, planVersion= and the created range among
// them) and cursor, the run with ETag, If-None-Match and the
// waitForSeq long poll, the events with afterSeq, the alerts, signals,
// which it records, and the gateway's schedules list with its keyset cursor.

// summaryOf is the list row of v, as the projector computes it.
func summaryOf(v api.RunView) api.RunSummary {
	return api.RunSummary{
		RunID: v.RunID, RunIdentity: v.RunIdentity, Status: v.Status, Stale: v.Stale,
		CreatedAt: v.CreatedAt, StartedAt: v.StartedAt, CompletedAt: v.CompletedAt,
		TotalDurationMs: v.TotalDurationMs, UpdatedAt: v.UpdatedAt, LastEventSeq: v.LastEventSeq,
		StepsTotal: v.StepsTotal(), StepsDone: v.StepsDone(), FailedSteps: v.FailedSteps,
		ParentRunID: parentRunID(v), Labels: v.Labels,
	}
}

// parentRunID is a child run's parent's run id, "" for another run.
func parentRunID(v api.RunView) string {
	if v.Parent == nil {
		return ""
	}
	return v.Parent.RunID
}

// listedRun is a run of GET /v1/runs: its summary and its run request id.
type listedRun struct {
	api.RunSummary
	RunRequestID string `json:"runRequestId"`
}

// signalCall is one POST /gateway/v1/runs/{runId}/signals the fake saw.
type signalCall struct {
	RunID         string
	Authorization string
	Body          map[string]json.RawMessage
}

// apiError is the read API's and the gateway's error body.
type apiError struct {
	Status  int
	Code    string
	Message string
}

// fakeAPI serves the read API from runs it holds in memory. It is safe for
// concurrent use.
type fakeAPI struct {
	token string

	mu          sync.Mutex
	runs        []api.RunView // newest first
	events      map[string][]events.Event
	alerts      []map[string]any
	listQueries []url.Values
	runRequests []url.Values
	signals     []signalCall
	signalError *apiError
	schedules   []api.Schedule // by scheduleId
	schedQuery  []url.Values
	schedError  *apiError
	duplicate   bool
	schedCalls  []string          // "POST /v1/schedules/{id}/pause" …, as the gateway sees them
	triggers    []api.Trigger     // by triggerId
	requestIDs  map[string]string // runId → runRequestId (setRequestIDs)
	bulk        fakeBulk          // the gateway's bulk jobs and reruns (fakebulk_test.go)
	changed     chan struct{}     // closed and replaced by every update
	closed      chan struct{}
}

func newFakeAPI(token string, runs ...api.RunView) *fakeAPI {
	return &fakeAPI{
		token:   token,
		runs:    runs,
		events:  map[string][]events.Event{},
		changed: make(chan struct{}),
		closed:  make(chan struct{}),
	}
}

// register adds the fake's routes to mux.
func (f *fakeAPI) register(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/runs", f.auth(f.list))
	mux.HandleFunc("GET /v1/runs/{runId}", f.auth(f.run))
	mux.HandleFunc("GET /v1/runs/{runId}/events", f.auth(f.eventsAfter))
	mux.HandleFunc("GET /v1/runs/{runId}/steps/{stepId}", f.auth(f.stepDetail))
	mux.HandleFunc("GET /v1/runs/{runId}/steps/{stepId}/children", f.auth(f.children))
	mux.HandleFunc("GET /v1/alerts", f.auth(f.listAlerts))
	mux.HandleFunc("POST /gateway/v1/runs/{runId}/signals", f.auth(f.signal))
	mux.HandleFunc("GET /gateway/v1/schedules", f.auth(f.scheduleList))
	f.registerManage(mux)
	f.registerBulk(mux)
}

// close ends every long poll; call it before closing the server.
func (f *fakeAPI) close() { close(f.closed) }

// update replaces the run with v's id (or adds v) and wakes the long polls.
func (f *fakeAPI) update(v api.RunView) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.runs, func(r api.RunView) bool { return r.RunID == v.RunID })
	if i < 0 {
		f.runs = append([]api.RunView{v}, f.runs...)
	} else {
		f.runs[i] = v
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// setSchedule replaces the schedule with s's id, or adds s, keeping the
// list in scheduleId order.
func (f *fakeAPI) setSchedule(s ...api.Schedule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, sc := range s {
		f.schedules = slices.DeleteFunc(f.schedules, func(o api.Schedule) bool { return o.ScheduleID == sc.ScheduleID })
		f.schedules = append(f.schedules, sc)
	}
	slices.SortFunc(f.schedules, func(a, b api.Schedule) int { return strings.Compare(a.ScheduleID, b.ScheduleID) })
}

// setScheduleError makes the schedules list answer e; nil answers again.
func (f *fakeAPI) setScheduleError(e *apiError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.schedError = e
}

func (f *fakeAPI) scheduleCalls() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.schedQuery)
}

func (f *fakeAPI) setEvents(runID string, evs []events.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events[runID] = evs
}

func (f *fakeAPI) setSignalError(e *apiError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signalError = e
}

func (f *fakeAPI) setDuplicate(d bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.duplicate = d
}

func (f *fakeAPI) setAlerts(a []map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.alerts = a
}

func (f *fakeAPI) signalCalls() []signalCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.signals)
}

func (f *fakeAPI) listCalls() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.listQueries)
}

func (f *fakeAPI) runCalls() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.runRequests)
}

// auth answers 401 unless the request carries the fake's key (an
// operator's) or viewerToken.
func (f *fakeAPI) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "Bearer "+f.token && a != "Bearer "+viewerToken {
			writeError(w, apiError{http.StatusUnauthorized, "Unauthenticated", "missing or unknown API key"})
			return
		}
		next(w, r)
	}
}

func (f *fakeAPI) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	f.listQueries = append(f.listQueries, q)
	var statuses []string
	for _, s := range q["status"] {
		statuses = append(statuses, strings.Split(s, ",")...)
	}
	var rows []listedRun
	for _, v := range f.runs {
		stale := slices.Contains(statuses, "STALE") && v.Stale
		if len(statuses) > 0 && !stale && !slices.Contains(statuses, string(v.Status)) {
			continue
		}
		if p := q.Get("plan"); p != "" && v.PlanID != p {
			continue
		}
		if q.Has("parent") && parentRunID(v) != q.Get("parent") {
			continue
		}
		req := f.requestIDs[v.RunID]
		if tr := q.Get("trigger"); q.Has("trigger") && !strings.HasPrefix(req, tr+":") {
			continue
		}
		if !matchesListFilters(q, v) {
			continue
		}
		rows = append(rows, listedRun{summaryOf(v), req})
	}
	f.mu.Unlock()

	limit := 50
	if l, err := strconv.Atoi(q.Get("limit")); err == nil && l >= 1 && l <= 200 {
		limit = l
	}
	start, _ := strconv.Atoi(q.Get("cursor"))
	start = min(max(start, 0), len(rows))
	end := min(start+limit, len(rows))
	body := map[string]any{"runs": append([]listedRun{}, rows[start:end]...)}
	if end < len(rows) {
		body["nextCursor"] = strconv.Itoa(end)
	}
	writeJSON(w, http.StatusOK, body)
}

// matchesListFilters reports whether v passes the list's filters by
// planVersion, label (each KEY=VALUE, ANDed) and created range
// (createdAfter inclusive, createdBefore exclusive), as the projector
// applies them.
func matchesListFilters(q url.Values, v api.RunView) bool {
	if q.Has("planVersion") && v.PlanVersion != q.Get("planVersion") {
		return false
	}
	for _, l := range q["label"] {
		k, val, _ := strings.Cut(l, "=")
		if got, ok := v.Labels[k]; !ok || got != val {
			return false
		}
	}
	if after, err := time.Parse(time.RFC3339Nano, q.Get("createdAfter")); err == nil && v.CreatedAt.Before(after) {
		return false
	}
	if before, err := time.Parse(time.RFC3339Nano, q.Get("createdBefore")); err == nil && !v.CreatedAt.Before(before) {
		return false
	}
	return true
}

// find returns the run and the channel the next update closes.
func (f *fakeAPI) find(id string) (api.RunView, bool, chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, v := range f.runs {
		if v.RunID == id {
			return v, true, f.changed
		}
	}
	return api.RunView{}, false, f.changed
}

func (f *fakeAPI) run(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("runId")
	q := r.URL.Query()
	f.mu.Lock()
	f.runRequests = append(f.runRequests, q)
	f.mu.Unlock()

	v, ok, changed := f.find(id)
	if !ok {
		writeError(w, apiError{http.StatusNotFound, "NotFound", "no run " + id})
		return
	}
	if s := q.Get("waitForSeq"); s != "" {
		want, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			writeError(w, apiError{http.StatusBadRequest, "InvalidArgument", "waitForSeq: " + err.Error()})
			return
		}
		timeout, err := time.ParseDuration(q.Get("timeout"))
		if err != nil || timeout > 30*time.Second {
			timeout = 30 * time.Second
		}
		deadline := time.NewTimer(timeout)
		defer deadline.Stop()
		stale := v.Stale
	wait:
		for v.LastEventSeq < want && v.Stale == stale {
			select {
			case <-changed:
				v, _, changed = f.find(id)
			case <-deadline.C:
				break wait
			case <-r.Context().Done():
				return
			case <-f.closed:
				return
			}
		}
	}
	tag := `"` + strconv.FormatInt(v.LastEventSeq, 10)
	if v.Stale {
		tag += "-stale"
	}
	tag += `"`
	w.Header().Set("ETag", tag)
	if r.Header.Get("If-None-Match") == tag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if q.Get("steps") != "all" { // top-level steps by default, as the projector answers
		v.Steps = v.TopSteps()
	}
	writeJSON(w, http.StatusOK, v)
}

// children answers a page of a forEach step's children from the run's
// snapshot, as the projector does.
func (f *fakeAPI) children(w http.ResponseWriter, r *http.Request) {
	v, ok, _ := f.find(r.PathValue("runId"))
	if !ok {
		writeError(w, apiError{http.StatusNotFound, "NotFound", "no run " + r.PathValue("runId")})
		return
	}
	after, limit := -1, 100
	if a, err := strconv.Atoi(r.URL.Query().Get("afterIndex")); err == nil {
		after = a
	}
	if l, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil {
		limit = l
	}
	if limit < 1 || limit > childMax { // the projector's default MaxChildrenPage
		writeError(w, apiError{http.StatusBadRequest, "InvalidArgument", "limit: want 1 to " + strconv.Itoa(childMax)})
		return
	}
	kids := v.Children(r.PathValue("stepId"), after)
	writeJSON(w, http.StatusOK, map[string]any{"children": kids[:min(limit, len(kids))], "more": len(kids) > limit})
}

func (f *fakeAPI) eventsAfter(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("runId")
	after, _ := strconv.ParseInt(r.URL.Query().Get("afterSeq"), 10, 64)
	limit := 100
	if l, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && l >= 1 && l <= 1000 {
		limit = l
	}
	f.mu.Lock()
	var page []events.Event
	more := false
	for _, ev := range f.events[id] {
		if ev.RunSeq <= after {
			continue
		}
		if len(page) == limit {
			more = true
			break
		}
		page = append(page, ev)
	}
	f.mu.Unlock()
	next := after
	if len(page) > 0 {
		next = page[len(page)-1].RunSeq
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": append([]events.Event{}, page...), "nextAfterSeq": next, "more": more})
}

// stepDetail answers a step's detail from the run's events, as the
// projector does: events.StepDetails over the log.
func (f *fakeAPI) stepDetail(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	evs := f.events[r.PathValue("runId")]
	f.mu.Unlock()
	details, err := events.StepDetails(evs)
	if err != nil {
		writeError(w, apiError{Status: http.StatusInternalServerError, Code: "Internal", Message: err.Error()})
		return
	}
	d := details[r.PathValue("stepId")]
	if d == nil {
		d = &events.StepDetail{StepID: r.PathValue("stepId"), Attempts: []events.StepAttempt{}}
	}
	writeJSON(w, http.StatusOK, d)
}

func (f *fakeAPI) listAlerts(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	a := append([]map[string]any{}, f.alerts...)
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"alerts": a})
}

func (f *fakeAPI) signal(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, apiError{http.StatusBadRequest, "InvalidArgument", "body: " + err.Error()})
		return
	}
	f.mu.Lock()
	f.signals = append(f.signals, signalCall{RunID: r.PathValue("runId"), Authorization: r.Header.Get("Authorization"), Body: body})
	fail, duplicate := f.signalError, f.duplicate
	f.mu.Unlock()
	if fail != nil {
		writeError(w, *fail)
		return
	}
	var name, id string
	_ = json.Unmarshal(body["signalName"], &name)
	_ = json.Unmarshal(body["signalId"], &id)
	writeJSON(w, http.StatusAccepted, map[string]any{
		"accepted": true, "workflowId": r.PathValue("runId"), "signalName": name, "signalId": id,
		"acceptedAt": time.Now().UTC(), "signalStorageKey": "sig:" + r.PathValue("runId") + ":" + name + ":" + id + ":1",
		"duplicate": duplicate,
	})
}

// scheduleList answers an api.ScheduleList as the gateway does: the
// schedules after the id the cursor names (base64url), in scheduleId order.
func (f *fakeAPI) scheduleList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 50
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 200 {
			writeError(w, apiError{http.StatusBadRequest, "InvalidArgument", "limit: must be between 1 and 200"})
			return
		}
		limit = n
	}
	after, err := base64.RawURLEncoding.DecodeString(q.Get("cursor"))
	if err != nil {
		writeError(w, apiError{http.StatusBadRequest, "InvalidArgument", "cursor: is not a cursor this API gave out"})
		return
	}
	f.mu.Lock()
	f.schedQuery = append(f.schedQuery, q)
	fail := f.schedError
	var page []api.Schedule
	more := false
	for _, s := range f.schedules {
		if s.ScheduleID <= string(after) {
			continue
		}
		if len(page) == limit {
			more = true
			break
		}
		page = append(page, s)
	}
	f.mu.Unlock()
	if fail != nil {
		writeError(w, *fail)
		return
	}
	list := api.ScheduleList{Schedules: append([]api.Schedule{}, page...)}
	if more {
		list.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(page[len(page)-1].ScheduleID))
	}
	writeJSON(w, http.StatusOK, list)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e apiError) {
	writeJSON(w, e.Status, map[string]any{"error": map[string]any{"code": e.Code, "message": e.Message, "details": map[string]any{}}})
}
