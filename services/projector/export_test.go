package projector

import "github.com/weftrun/weft/pkg/api"

// QueryParam is a query parameter a read API route accepts.
type QueryParam struct {
	Name       string
	Repeatable bool
}

// ReadRoutes returns the read API's routes under /v1/, as Handler
// registers them, each with the query parameters it accepts.
func ReadRoutes() map[string][]QueryParam {
	out := map[string][]QueryParam{}
	for _, r := range readRoutes {
		params := []QueryParam{}
		for _, p := range r.params {
			params = append(params, QueryParam{Name: p.name, Repeatable: p.repeatable})
		}
		out[r.pattern] = params
	}
	return out
}

// StatusFilters returns the values GET /v1/runs's status filter accepts.
func StatusFilters() []string {
	out := []string{}
	for _, st := range runStatuses {
		out = append(out, string(st))
	}
	return append(out, api.StatusStale)
}
