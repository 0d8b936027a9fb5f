package gateway

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/strictjson"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// handleRPC serves JSON-RPC 2.0 (internal/jsonrpc). Faults of the HTTP
// exchange itself (no key, wrong content type, body over the limit, the
// key past its rate, Config.KeyRate) are
// answered with their HTTP status and a JSON-RPC error response with id
// null; a body that is not strict JSON is a -32700 parse error; anything
// else is answered 200 with the JSON-RPC response, or 204 when the body
// held only notifications.
func (s *Service) handleRPC(w http.ResponseWriter, r *http.Request) {
	p, body, err := s.admitRPC(r)
	if err != nil {
		e := s.refusal(r.Context(), err)
		s.countLimit(r.Context(), transportJSONRPC, e)
		if e.RetryAfter > 0 {
			w.Header().Set("Retry-After", retryAfterHeader(e))
		}
		re := rpcError(e)
		if e.Code == api.CodePayloadTooLarge {
			re.Code = jsonrpc.CodePayloadTooLarge // the body, not a param, is too large
		}
		httpserve.WriteRaw(w, statusOf(e.Code), jsonrpc.ErrorResponse(nil, re))
		return
	}
	if err := strictjson.Valid(body, strictjson.Options{MaxDepth: s.cfg.MaxDepth, Document: "request body"}); err != nil {
		httpserve.WriteRaw(w, http.StatusOK, jsonrpc.ParseErrorResponse(err.Error(), nil))
		return
	}
	resp, ok := s.rpc.Serve(auth.WithPrincipal(r.Context(), p), body)
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	httpserve.WriteRaw(w, http.StatusOK, resp)
}

// rpcMethods are the gateway's JSON-RPC methods (docs/api.md).
func (s *Service) rpcMethods() map[string]jsonrpc.Method {
	return map[string]jsonrpc.Method{
		"run.start":   s.rpcRunStart,
		"signal.send": rpcCall(s, s.rpcSignalSend),
		"run.rerun":   rpcCall(s, s.rpcRerun),
		"bulk.start":  rpcCall(s, s.rpcBulkStart),
		"bulk.get": rpcCall(s, func(ctx context.Context, p auth.Principal, x bulkIDParams) (any, error) {
			return s.bulk.Get(ctx, p, x.BulkID)
		}),
		"bulk.cancel": rpcCall(s, func(ctx context.Context, p auth.Principal, x bulkIDParams) (any, error) {
			return s.bulk.Cancel(ctx, p, x.BulkID)
		}),
		"schedule.create": rpcCall(s, s.rpcScheduleCreate),
		"schedule.update": rpcCall(s, s.rpcScheduleUpdate),
		"schedule.get": rpcCall(s, func(ctx context.Context, p auth.Principal, x idParams) (any, error) {
			return s.schedules.Get(ctx, p, x.ScheduleID)
		}),
		"schedule.list": rpcCall(s, func(ctx context.Context, p auth.Principal, x listParams) (any, error) {
			return s.schedules.List(ctx, p, x.Cursor, x.Limit)
		}),
		"schedule.pause": rpcCall(s, func(ctx context.Context, p auth.Principal, x idParams) (any, error) {
			return s.schedules.Pause(ctx, p, x.ScheduleID)
		}),
		"schedule.resume": rpcCall(s, func(ctx context.Context, p auth.Principal, x idParams) (any, error) {
			return s.schedules.Resume(ctx, p, x.ScheduleID)
		}),
		"schedule.delete": rpcCall(s, s.rpcScheduleDelete),
		"trigger.create":  rpcCall(s, s.rpcTriggerCreate),
		"trigger.get": rpcCall(s, func(ctx context.Context, p auth.Principal, x triggerIDParams) (any, error) {
			return s.triggers.Get(ctx, p, x.TriggerID)
		}),
		"trigger.list": rpcCall(s, func(ctx context.Context, p auth.Principal, x listParams) (any, error) {
			return s.triggers.List(ctx, p, x.Cursor, x.Limit)
		}),
		"trigger.delete": rpcCall(s, s.rpcTriggerDelete),
		"trigger.send":   rpcCall(s, s.rpcTriggerSend),
		"plan.push":      rpcCall(s, s.rpcPlanPush),
		"plan.list":      rpcCall(s, s.rpcPlanList),
		"plan.get":       rpcCall(s, s.rpcPlanGet),
		"plan.getVersion": rpcCall(s, func(ctx context.Context, p auth.Principal, x planVersionParams) (any, error) {
			return s.plans.VersionGet(ctx, p, x.ProjectID, x.PlanID, x.PlanVersion)
		}),
		"plan.archive": rpcCall(s, func(ctx context.Context, p auth.Principal, x planVersionParams) (any, error) {
			return s.plans.Archive(ctx, p, x.ProjectID, x.PlanID, x.PlanVersion)
		}),
		"plan.restore": rpcCall(s, func(ctx context.Context, p auth.Principal, x planVersionParams) (any, error) {
			return s.plans.Restore(ctx, p, x.ProjectID, x.PlanID, x.PlanVersion)
		}),
	}
}

// rpcCall makes a JSON-RPC method of do: it decodes the params strictly
// into a P, requires the ids a P names, and renders refusals as JSON-RPC
// errors.
func rpcCall[P any](s *Service, do func(context.Context, auth.Principal, P) (any, error)) jsonrpc.Method {
	return func(ctx context.Context, params json.RawMessage) (any, error) {
		p, _ := auth.PrincipalFrom(ctx)
		var x P
		if err := decode(params, &x, s.cfg.MaxDepth, "params"); err != nil {
			return nil, s.rpcFault(ctx, err)
		}
		if r, ok := any(x).(idsRequired); ok {
			if err := r.requireIDs(); err != nil {
				return nil, s.rpcFault(ctx, err)
			}
		}
		res, err := do(ctx, p, x)
		if err != nil {
			return nil, s.rpcFault(ctx, err)
		}
		return res, nil
	}
}

func (s *Service) rpcRunStart(ctx context.Context, params json.RawMessage) (any, error) {
	p, _ := auth.PrincipalFrom(ctx)
	req, err := decodeStart(params, s.cfg.MaxDepth, "params")
	if err != nil {
		return nil, s.rpcFault(ctx, err)
	}
	res, err := s.runStart(ctx, p, req)
	if err != nil {
		return nil, s.rpcFault(ctx, err)
	}
	return res.StartRunResult, nil
}

func (s *Service) rpcSignalSend(ctx context.Context, p auth.Principal, sp signalParams) (any, error) {
	runID, field, err := sp.run()
	if err != nil {
		return nil, err
	}
	sig, err := sp.signal(runID)
	if err != nil {
		return nil, err
	}
	sig.RunField = field
	res, err := s.signalSend(ctx, transportJSONRPC, p, sig)
	if err != nil {
		return nil, err
	}
	return res.AcceptedSignalResult, nil
}

// rpcFault turns a refusal or fault into its JSON-RPC error. A fault of
// the gateway is -32603 whose data is the REST error's: code Internal and
// the correlation id it was logged with, never its text.
func (s *Service) rpcFault(ctx context.Context, err error) error {
	e := s.refusal(ctx, err)
	s.countLimit(ctx, transportJSONRPC, e)
	return rpcError(e)
}

// rpcError maps a Weft error onto a JSON-RPC error whose data is the Weft
// error (code, message, details). Validation faults are -32602; every
// conflict is jsonrpc.CodeConflict.
func rpcError(e *intake.Error) *jsonrpc.Error {
	code := jsonrpc.CodeInternalError
	switch e.Code {
	case api.CodeInvalidArgument, api.CodePayloadTooLarge, api.CodeUnknownSignal:
		code = jsonrpc.CodeInvalidParams
	case api.CodeUnsupportedMediaType:
		code = jsonrpc.CodeInvalidRequest
	case api.CodeUnauthenticated:
		code = jsonrpc.CodeUnauthenticated
	case api.CodePermissionDenied:
		code = jsonrpc.CodePermissionDenied
	case api.CodeNotFound:
		code = jsonrpc.CodeNotFound
	case api.CodeSignalAcceptanceIndeterminate, api.CodeAlreadyExists, api.CodeQuotaExceeded, api.CodeRunTerminal,
		api.CodeIdempotencyConflict, api.CodePlanVersionConflict, api.CodePlanArchived, api.CodeRerunRefused:
		code = jsonrpc.CodeConflict
	case api.CodeRateLimited, api.CodeOverloaded:
		code = jsonrpc.CodeRateLimited
	case api.CodeUnavailable:
		code = jsonrpc.CodeUnavailable
	}
	return &jsonrpc.Error{Code: code, Message: e.Message, Data: e.API()}
}
