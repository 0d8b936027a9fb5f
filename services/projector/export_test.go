package projector

import (
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/projector/internal/readapi"
)

// QueryParam is a query parameter a read API route accepts.
type QueryParam = readapi.QueryParam

// ReadRoutes returns the read API's routes under /v1/, as Handler
// registers them, each with the query parameters it accepts.
func ReadRoutes() map[string][]QueryParam { return readapi.Routes() }

// StatusFilters returns the values GET /v1/runs's status filter accepts.
func StatusFilters() []string {
	out := []string{}
	for _, st := range readapi.RunStatuses {
		out = append(out, string(st))
	}
	return append(out, api.StatusStale)
}
