package gateway

import (
	"context"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

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

// idsRequired is implemented by params that must name a schedule or
// trigger: requireIDs refuses them when they do not.
type idsRequired interface{ requireIDs() error }

func (x idParams) requireIDs() error        { return requireID("scheduleId", x.ScheduleID) }
func (x triggerIDParams) requireIDs() error { return requireID("triggerId", x.TriggerID) }
func (x eventParams) requireIDs() error     { return requireID("triggerId", x.TriggerID) }

// requireID refuses an empty id of field.
func requireID(field, id string) error {
	if id == "" {
		return intake.Invalid(field, "is required")
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
