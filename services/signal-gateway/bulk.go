package gateway

import (
	"context"
	"net/http"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
)

// The bulk jobs (docs/api.md, "Bulk operations"): POST /v1/bulk (202 for
// a new job, 200 for a repeat of its bulkId), GET /v1/bulk/{bulkId},
// POST /v1/bulk/{bulkId}/cancel, and JSON-RPC bulk.start, bulk.get and
// bulk.cancel.

func (s *Service) restBulkStart(r *http.Request, p auth.Principal) (any, error) {
	req, err := bodyOf[api.BulkRequest](s, r)
	if err != nil {
		return nil, err
	}
	job, created, err := s.bulk.Create(r.Context(), p, req)
	if err != nil {
		return nil, err
	}
	status := http.StatusOK
	if created {
		status = http.StatusAccepted
	}
	return reply{status, job}, nil
}

func (s *Service) restBulkGet(r *http.Request, p auth.Principal) (any, error) {
	return s.bulk.Get(r.Context(), p, r.PathValue("bulkId"))
}

func (s *Service) restBulkCancel(r *http.Request, p auth.Principal) (any, error) {
	return s.bulk.Cancel(r.Context(), p, r.PathValue("bulkId"))
}

// bulkIDParams names a bulk job over JSON-RPC.
type bulkIDParams struct {
	BulkID string `json:"bulkId"`
}

func (x bulkIDParams) requireIDs() error { return requireID("bulkId", x.BulkID) }

func (s *Service) rpcBulkStart(ctx context.Context, p auth.Principal, req api.BulkRequest) (any, error) {
	job, _, err := s.bulk.Create(ctx, p, req)
	return job, err
}
