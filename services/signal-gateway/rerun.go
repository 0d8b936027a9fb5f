package gateway

import (
	"context"
	"net/http"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// The rerun of a run from one of its steps (docs/api.md, "Rerun from a
// step"): POST /v1/runs/{runId}/rerun and JSON-RPC run.rerun, both
// answered as a start is (201 for a new run, 200 and duplicate for a
// repeat).

func (s *Service) restRerun(r *http.Request, p auth.Principal) (any, error) {
	req, err := bodyOf[api.RerunRequest](s, r)
	if err != nil {
		return nil, err
	}
	if req.RunID != "" {
		return nil, intake.Invalid("runId", "is taken from the path; the body must not carry it")
	}
	req.RunID = r.PathValue("runId")
	res, err := s.intake.Rerun(r.Context(), p, req)
	if err != nil {
		return nil, err
	}
	return reply{createdStatus(res.Created), duplicateTagged{res.StartRunResult, res.Duplicate}}, nil
}

func (s *Service) rpcRerun(ctx context.Context, p auth.Principal, req api.RerunRequest) (any, error) {
	res, err := s.intake.Rerun(ctx, p, req)
	if err != nil {
		return nil, err
	}
	return res.StartRunResult, nil
}
