package gateway

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/nats-io/nats.go"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/trigger"
)

// eventBody is the body of POST /v1/triggers/{triggerId}/events and of a
// NATS publish to weft.triggers.<triggerId>: api.TriggerEvent, with the
// eventId kept raw so a present non-string is refused, not read as absent.
type eventBody struct {
	EventID json.RawMessage `json:"eventId"`
	Payload json.RawMessage `json:"payload"`
}

// eventParams is the params of JSON-RPC trigger.send.
type eventParams struct {
	TriggerID string          `json:"triggerId"`
	EventID   json.RawMessage `json:"eventId"`
	Payload   json.RawMessage `json:"payload"`
}

// event turns the decoded fields into a trigger.Event.
func event(rawID, payload json.RawMessage) (trigger.Event, error) {
	id, err := optionalID("eventId", rawID)
	return trigger.Event{ID: id, Payload: payload}, err
}

// The REST endpoints of event triggers (docs/schedules.md), served through
// rest: a trigger of another tenant is NotFound.

func (s *Service) restTriggerCreate(r *http.Request, p auth.Principal) (any, error) {
	req, err := bodyOf[api.TriggerRequest](s, r)
	if err != nil {
		return nil, err
	}
	tr, created, err := s.triggers.Create(r.Context(), p, req)
	return reply{createdStatus(created), tr}, err
}

func (s *Service) restTriggerGet(r *http.Request, p auth.Principal) (any, error) {
	return s.triggers.Get(r.Context(), p, r.PathValue("triggerId"))
}

func (s *Service) restTriggerList(r *http.Request, p auth.Principal) (any, error) {
	cursor, limit, err := pageQuery(r)
	if err != nil {
		return nil, err
	}
	return s.triggers.List(r.Context(), p, cursor, limit)
}

func (s *Service) restTriggerDelete(r *http.Request, p auth.Principal) (any, error) {
	return reply{status: http.StatusNoContent}, s.triggers.Delete(r.Context(), p, r.PathValue("triggerId"))
}

func (s *Service) restTriggerEvent(r *http.Request, p auth.Principal) (any, error) {
	b, err := bodyOf[eventBody](s, r)
	if err != nil {
		return nil, err
	}
	return s.triggerEvent(r.Context(), transportHTTP, p, r.PathValue("triggerId"), b.EventID, b.Payload)
}

// natsTriggerEvent takes in a publish to weft.triggers.<triggerId>.
func (s *Service) natsTriggerEvent(ctx context.Context, m *nats.Msg) (any, int, error) {
	id, p, b, err := natsAdmitTo[eventBody](s, m, streams.TriggerSubjectPrefix, "trigger")
	if err != nil {
		return nil, 0, err
	}
	res, err := s.triggerEvent(ctx, transportNATS, p, id, b.EventID, b.Payload)
	if err != nil {
		return nil, 0, err
	}
	return res.body, res.status, nil
}

// triggerEvent checks an event sent over transport to trigger id and
// hands it to triggerSend. The reply is 201 for an event that started a
// run, 200 for a repeated one, tagged with whether it was a duplicate.
func (s *Service) triggerEvent(ctx context.Context, transport string, p auth.Principal, id string,
	rawID, payload json.RawMessage) (reply, error) {
	ev, err := event(rawID, payload)
	if err != nil {
		return reply{}, err
	}
	res, created, err := s.triggerSend(ctx, transport, p, id, ev)
	return reply{createdStatus(created), duplicateTagged{res, res.Duplicate}}, err
}

// triggerSend hands an event to the triggers and counts its outcome
// under transport.
func (s *Service) triggerSend(ctx context.Context, transport string, p auth.Principal, id string,
	ev trigger.Event) (api.TriggerEventResult, bool, error) {
	res, created, err := s.triggers.Send(ctx, p, id, ev)
	if m := s.metrics; m != nil {
		outcome := signalOutcome(intake.SignalResult{Duplicate: res.Duplicate}, err)
		m.events.Add(ctx, 1, m.opts[[2]string{outcome, transport}])
	}
	return res, created, err
}
