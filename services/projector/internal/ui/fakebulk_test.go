package ui_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// This file adds to the fake what the runs list's bulk actions use: the
// gateway's bulk jobs (POST /v1/bulk, GET /v1/bulk/{bulkId}, POST
// /v1/bulk/{bulkId}/cancel; 403 for a viewer, as the gateway answers) and
// its reruns, each recorded. A job matches the fake's runs by its filter
// when it starts, and every GET of it handles one more of them (done, or
// skipped with the gateway's reason) until all are, when it is DONE.

// fakeBulk is the fake gateway's bulk state, guarded by fakeAPI.mu.
type fakeBulk struct {
	requests []api.BulkRequest // every POST /v1/bulk, in order
	jobs     map[string]*fakeJob
	polls    map[string]int // GETs of each job
	cancels  []string       // the bulkIds of the cancels, in order
	hold     bool           // a GET does not advance the job
	refuse   *apiError      // the answer to the next POST /v1/bulk
	reruns   []signalCall   // every POST /v1/runs/{runId}/rerun
}

// fakeJob is a job and the runs it matched, in creation order; the first
// Done+Skipped+Failed of them are handled.
type fakeJob struct {
	job  api.BulkJob
	runs []api.RunView
}

func (f *fakeAPI) registerBulk(mux *http.ServeMux) {
	mux.HandleFunc("POST /gateway/v1/bulk", f.auth(f.bulkStart))
	mux.HandleFunc("GET /gateway/v1/bulk/{bulkId}", f.auth(f.bulkGet))
	mux.HandleFunc("POST /gateway/v1/bulk/{bulkId}/cancel", f.auth(f.bulkCancel))
	mux.HandleFunc("POST /gateway/v1/runs/{runId}/rerun", f.auth(f.rerun))
}

// setBulkHold makes GETs of a job leave it as it is (hold) or advance it.
func (f *fakeAPI) setBulkHold(hold bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bulk.hold = hold
}

// refuseNextBulk makes the next POST /v1/bulk answer e.
func (f *fakeAPI) refuseNextBulk(e apiError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bulk.refuse = &e
}

func (f *fakeAPI) bulkRequests() []api.BulkRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.bulk.requests)
}

func (f *fakeAPI) bulkCancels() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.bulk.cancels)
}

func (f *fakeAPI) bulkPolls(bulkID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bulk.polls[bulkID]
}

func (f *fakeAPI) rerunCalls() []signalCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.bulk.reruns)
}

func (f *fakeAPI) bulkStart(w http.ResponseWriter, r *http.Request) {
	if isViewer(r) {
		writeError(w, apiError{http.StatusForbidden, "PermissionDenied", `role "viewer" may not send signals`})
		return
	}
	var req api.BulkRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, apiError{http.StatusBadRequest, "InvalidArgument", "body: " + err.Error()})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bulk.requests = append(f.bulk.requests, req)
	if e := f.bulk.refuse; e != nil {
		f.bulk.refuse = nil
		writeError(w, *e)
		return
	}
	if j, ok := f.bulk.jobs[req.BulkID]; ok {
		writeJSON(w, http.StatusOK, j.job)
		return
	}
	j := &fakeJob{job: api.BulkJob{BulkRequest: req, TenantID: "acme", Status: api.BulkRunning,
		SkippedReasons: map[string]int{}, CreatedAt: time.Now().UTC()}}
	for _, v := range slices.Backward(f.runs) { // f.runs is newest first
		if bulkMatches(req.Filter, v) {
			j.runs = append(j.runs, v)
		}
	}
	j.job.Matched = int64(len(j.runs))
	if f.bulk.jobs == nil {
		f.bulk.jobs, f.bulk.polls = map[string]*fakeJob{}, map[string]int{}
	}
	f.bulk.jobs[req.BulkID] = j
	writeJSON(w, http.StatusAccepted, j.job)
}

// bulkMatches reports whether v passes every field of filter, as the
// gateway matches them.
func bulkMatches(filter api.BulkFilter, v api.RunView) bool {
	switch {
	case len(filter.Status) > 0 && !slices.Contains(filter.Status, string(v.Status)),
		filter.PlanID != "" && v.PlanID != filter.PlanID,
		filter.PlanVersion != "" && v.PlanVersion != filter.PlanVersion,
		filter.Parent != "" && parentRunID(v) != filter.Parent:
		return false
	}
	for k, val := range filter.Labels {
		if got, ok := v.Labels[k]; !ok || got != val {
			return false
		}
	}
	return true
}

func (f *fakeAPI) bulkGet(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("bulkId")
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.bulk.jobs[id]
	if !ok {
		writeError(w, apiError{http.StatusNotFound, "NotFound", "no bulk job " + id})
		return
	}
	f.bulk.polls[id]++
	if !f.bulk.hold {
		j.advance()
	}
	writeJSON(w, http.StatusOK, j.cloneJob())
}

// advance handles the job's next run, and ends the job after its last.
func (j *fakeJob) advance() {
	if j.job.Status != api.BulkRunning {
		return
	}
	if n := j.job.Done + j.job.Skipped + j.job.Failed; n < int64(len(j.runs)) {
		if why := fakeSkipReason(j.job.Action, j.runs[n].Status); why != "" {
			j.job.Skipped++
			j.job.SkippedReasons[why]++
		} else {
			j.job.Done++
		}
	}
	if j.job.Done+j.job.Skipped+j.job.Failed == int64(len(j.runs)) {
		j.job.Status = api.BulkDone
		j.job.EndedAt = ptr(time.Now().UTC())
	}
}

// cloneJob is the job, its reasons copied.
func (j *fakeJob) cloneJob() api.BulkJob {
	c := j.job
	c.SkippedReasons = maps.Clone(j.job.SkippedReasons)
	return c
}

// fakeSkipReason is why the gateway skips action on a run in status, or "".
func fakeSkipReason(action string, status events.RunStatus) string {
	switch {
	case action == api.BulkCancel && status.Terminal():
		return "run has ended"
	case action == api.BulkPause && status != events.RunStatusRunning:
		return "run is not RUNNING"
	case action == api.BulkResume && status != events.RunStatusPaused:
		return "run is not PAUSED"
	case (action == api.BulkRetryFailedSteps || action == api.BulkRerun) && status != events.RunStatusFailed:
		return "run is not FAILED"
	}
	return ""
}

func (f *fakeAPI) bulkCancel(w http.ResponseWriter, r *http.Request) {
	if isViewer(r) {
		writeError(w, apiError{http.StatusForbidden, "PermissionDenied", `role "viewer" may not send signals`})
		return
	}
	id := r.PathValue("bulkId")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bulk.cancels = append(f.bulk.cancels, id)
	j, ok := f.bulk.jobs[id]
	if !ok {
		writeError(w, apiError{http.StatusNotFound, "NotFound", "no bulk job " + id})
		return
	}
	if j.job.Status == api.BulkRunning {
		j.job.Status = api.BulkCancelled
		j.job.EndedAt = ptr(time.Now().UTC())
	}
	writeJSON(w, http.StatusOK, j.cloneJob())
}

// rerun records a rerun and answers a new run's id, as the gateway does.
func (f *fakeAPI) rerun(w http.ResponseWriter, r *http.Request) {
	var body map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, apiError{http.StatusBadRequest, "InvalidArgument", "body: " + err.Error()})
		return
	}
	f.mu.Lock()
	f.bulk.reruns = append(f.bulk.reruns, signalCall{RunID: r.PathValue("runId"), Authorization: r.Header.Get("Authorization"), Body: body})
	n := len(f.bulk.reruns)
	f.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"runId": runID(900 + n), "created": true})
}
