package ui_test

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/weftrun/weft/pkg/api"
)

// viewerToken is a viewer's key: it reads, and may not manage schedules.
const viewerToken = "weft-viewer-key"

// This file adds to the fake what the schedules page's actions and the
// triggers page use: GET /v1/whoami, the gateway's schedule pause, resume
// and delete (403 for a viewer, as the gateway answers), and its triggers
// list.

func (f *fakeAPI) registerManage(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/whoami", f.auth(f.whoami))
	mux.HandleFunc("POST /gateway/v1/schedules/{scheduleId}/pause", f.auth(f.scheduleAction))
	mux.HandleFunc("POST /gateway/v1/schedules/{scheduleId}/resume", f.auth(f.scheduleAction))
	mux.HandleFunc("DELETE /gateway/v1/schedules/{scheduleId}", f.auth(f.scheduleAction))
	mux.HandleFunc("GET /gateway/v1/triggers", f.auth(f.triggerList))
}

func isViewer(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+viewerToken }

func (f *fakeAPI) whoami(w http.ResponseWriter, r *http.Request) {
	if isViewer(r) {
		writeJSON(w, http.StatusOK, map[string]any{"keyId": "viewer", "tenantId": "acme", "role": "viewer", "actions": []string{"run.read"}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"keyId": "ops", "tenantId": "acme", "role": "operator",
		"actions": []string{"run.read", "run.start", "signal.send"}})
}

// scheduleAction pauses, resumes or deletes a schedule as the gateway does,
// and records the call.
func (f *fakeAPI) scheduleAction(w http.ResponseWriter, r *http.Request) {
	if isViewer(r) {
		writeError(w, apiError{http.StatusForbidden, "PermissionDenied", `role "viewer" may not start runs`})
		return
	}
	id := r.PathValue("scheduleId")
	call := r.Method + " " + strings.TrimPrefix(r.URL.Path, "/gateway")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.schedCalls = append(f.schedCalls, call)
	i := slices.IndexFunc(f.schedules, func(s api.Schedule) bool { return s.ScheduleID == id })
	if i < 0 {
		writeError(w, apiError{http.StatusNotFound, "NotFound", "no schedule " + id})
		return
	}
	switch {
	case r.Method == http.MethodDelete:
		f.schedules = slices.Delete(f.schedules, i, i+1)
		w.WriteHeader(http.StatusNoContent)
		return
	case strings.HasSuffix(r.URL.Path, "/pause"):
		f.schedules[i].Paused = true
	default:
		f.schedules[i].Paused = false
	}
	writeJSON(w, http.StatusOK, f.schedules[i])
}

func (f *fakeAPI) scheduleActionCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.schedCalls)
}

// setTriggers replaces the triggers the fake lists.
func (f *fakeAPI) setTriggers(t ...api.Trigger) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.triggers = slices.Clone(t)
	slices.SortFunc(f.triggers, func(a, b api.Trigger) int { return strings.Compare(a.TriggerID, b.TriggerID) })
}

// triggerList answers every trigger in one page.
func (f *fakeAPI) triggerList(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	list := api.TriggerList{Triggers: append([]api.Trigger{}, f.triggers...)}
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, list)
}

// setRequestIDs records the run request id of runs the fake holds (runId
// → runRequestId), which GET /v1/runs answers and its trigger filter
// matches.
func (f *fakeAPI) setRequestIDs(ids map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requestIDs = maps.Clone(ids)
}
