package gateway

import (
	"context"
	"encoding/json"

	"github.com/weftrun/weft/internal/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// rpcMethods are the gateway's JSON-RPC methods (docs/api.md).
func (s *Service) rpcMethods() map[string]jsonrpc.Method {
	return map[string]jsonrpc.Method{
		"run.start":       s.rpcRunStart,
		"signal.send":     s.rpcSignalSend,
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
	}
}

// idParams names a schedule.
type idParams struct {
	ScheduleID string `json:"scheduleId"`
}

// triggerIDParams names a trigger.
type triggerIDParams struct {
	TriggerID string `json:"triggerId"`
}

// listParams asks for a page of a list.
type listParams struct {
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor"`
}

// deleted answers a JSON-RPC delete.
type deleted struct {
	ScheduleID string `json:"scheduleId,omitempty"`
	TriggerID  string `json:"triggerId,omitempty"`
	Deleted    bool   `json:"deleted"`
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
		if err := requireIDs(x); err != nil {
			return nil, s.rpcFault(ctx, err)
		}
		res, err := do(ctx, p, x)
		if err != nil {
			return nil, s.rpcFault(ctx, err)
		}
		return res, nil
	}
}

// requireIDs refuses params that must name a schedule or trigger and do
// not.
func requireIDs(x any) error {
	switch v := x.(type) {
	case idParams:
		if v.ScheduleID == "" {
			return intake.Invalid("scheduleId", "is required")
		}
	case triggerIDParams:
		if v.TriggerID == "" {
			return intake.Invalid("triggerId", "is required")
		}
	case eventParams:
		if v.TriggerID == "" {
			return intake.Invalid("triggerId", "is required")
		}
	}
	return nil
}

func (s *Service) rpcScheduleCreate(ctx context.Context, p auth.Principal, req api.ScheduleRequest) (any, error) {
	sch, _, err := s.schedules.Create(ctx, p, req)
	return sch, err
}

// rpcScheduleUpdate takes a ScheduleRequest whose scheduleId names the
// schedule to update.
func (s *Service) rpcScheduleUpdate(ctx context.Context, p auth.Principal, req api.ScheduleRequest) (any, error) {
	if req.ScheduleID == "" {
		return nil, intake.Invalid("scheduleId", "is required: it names the schedule to update")
	}
	return s.schedules.Update(ctx, p, req.ScheduleID, req)
}

func (s *Service) rpcScheduleDelete(ctx context.Context, p auth.Principal, x idParams) (any, error) {
	if err := s.schedules.Delete(ctx, p, x.ScheduleID); err != nil {
		return nil, err
	}
	return deleted{ScheduleID: x.ScheduleID, Deleted: true}, nil
}

func (s *Service) rpcTriggerCreate(ctx context.Context, p auth.Principal, req api.TriggerRequest) (any, error) {
	tr, _, err := s.triggers.Create(ctx, p, req)
	return tr, err
}

func (s *Service) rpcTriggerDelete(ctx context.Context, p auth.Principal, x triggerIDParams) (any, error) {
	if err := s.triggers.Delete(ctx, p, x.TriggerID); err != nil {
		return nil, err
	}
	return deleted{TriggerID: x.TriggerID, Deleted: true}, nil
}

func (s *Service) rpcTriggerSend(ctx context.Context, p auth.Principal, x eventParams) (any, error) {
	ev, err := event(x.EventID, x.Payload)
	if err != nil {
		return nil, err
	}
	res, _, err := s.triggerSend(ctx, transportJSONRPC, p, x.TriggerID, ev)
	return res, err
}
