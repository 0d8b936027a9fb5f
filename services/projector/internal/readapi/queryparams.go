package readapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
)

// QueryParam is a query parameter a read API route accepts. A
// Repeatable one may be given any number of times; any other at most once.
type QueryParam struct {
	Name       string
	Repeatable bool
}

// The query parameters of each read API route (readRoutes). A request
// with any other is refused (checkQuery); openapi.json documents exactly
// these.
var (
	listParams = []QueryParam{{"status", true}, {"tenant", false}, {"plan", false}, {"planVersion", false},
		{"label", true}, {"trigger", false}, {"schedule", false}, {"parent", false}, {"rerunOf", false}, {"queuedKey", false},
		{"createdAfter", false}, {"createdBefore", false}, {"endedAfter", false}, {"endedBefore", false},
		{"projectId", false}, {"environmentId", false}, {"limit", false}, {"cursor", false}}
	runParams      = []QueryParam{{"steps", false}, {"waitForSeq", false}, {"timeout", false}}
	eventsParams   = []QueryParam{{"afterSeq", false}, {"limit", false}}
	childrenParams = []QueryParam{{"afterIndex", false}, {"limit", false}}
)

// readRoute is a read API route: its pattern, the query parameters it
// accepts and its handler, which authed calls once the caller is known
// and the query checked.
type readRoute struct {
	pattern string
	params  []QueryParam
	handle  func(a *API, w http.ResponseWriter, r *http.Request, p auth.Principal)
}

// readRoutes are the read API's routes under /v1/ (docs/read-api.md,
// openapi.json), as Handler registers them.
var readRoutes = []readRoute{
	{"GET /v1/runs", listParams, (*API).handleRunsList},
	{"GET /v1/runs/{runId}", runParams, (*API).handleRunGet},
	{"GET /v1/runs/{runId}/events", eventsParams, (*API).handleRunEvents},
	{"GET /v1/runs/{runId}/steps/{stepId}", nil, (*API).handleStepGet},
	{"GET /v1/runs/{runId}/steps/{stepId}/children", childrenParams, (*API).handleStepChildren},
	{"GET /v1/alerts", nil, (*API).handleAlerts},
	{"GET /v1/whoami", nil, (*API).handleWhoami},
}

// Routes returns the read API's routes under /v1/, as Handler registers
// them, each with the query parameters it accepts: what openapi.json
// documents.
func Routes() map[string][]QueryParam {
	out := map[string][]QueryParam{}
	for _, r := range readRoutes {
		out[r.pattern] = append([]QueryParam{}, r.params...)
	}
	return out
}

// checkQuery answers 400 InvalidArgument, and returns false, for a query
// string that does not parse, a parameter route does not accept
// (details.field names it, details.accepted lists the accepted ones) and
// a second value of a parameter that takes one (details.field).
func checkQuery(w http.ResponseWriter, r *http.Request, route readRoute) bool {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, api.CodeInvalidArgument, "query string: "+err.Error())
		return false
	}
	for name, values := range q {
		p, known := paramNamed(route.params, name)
		switch {
		case !known:
			accepted := paramNames(route.params)
			msg := fmt.Sprintf("unknown query parameter %q: %s takes none", name, route.pattern)
			if len(accepted) > 0 {
				msg = fmt.Sprintf("unknown query parameter %q: %s takes %s", name, route.pattern, strings.Join(accepted, ", "))
			}
			writeParamError(w, msg, map[string]any{"field": name, "accepted": accepted})
			return false
		case len(values) > 1 && !p.Repeatable:
			writeParamError(w, fmt.Sprintf("query parameter %q is given %d times: %s takes one value of it",
				name, len(values), route.pattern), map[string]any{"field": name})
			return false
		}
	}
	return true
}

// paramNamed returns the parameter of params named name, if there is one.
func paramNamed(params []QueryParam, name string) (QueryParam, bool) {
	for _, p := range params {
		if p.Name == name {
			return p, true
		}
	}
	return QueryParam{}, false
}

// paramNames are the names of params, in order; never nil.
func paramNames(params []QueryParam) []string {
	names := make([]string, 0, len(params))
	for _, p := range params {
		names = append(names, p.Name)
	}
	return names
}

// writeParamError answers 400 InvalidArgument with msg and details.
func writeParamError(w http.ResponseWriter, msg string, details map[string]any) {
	httpserve.WriteJSON(w, http.StatusBadRequest, api.ErrorBody{Error: api.Error{
		Code: api.CodeInvalidArgument, Message: msg, Details: details}})
}
