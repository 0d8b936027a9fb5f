package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/weftrun/weft/internal/auth"
	"github.com/weftrun/weft/internal/httpserve"
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
	ev := trigger.Event{Payload: payload}
	if rawID == nil {
		return ev, nil
	}
	var id string
	if bytes.HasPrefix(rawID, []byte(`"`)) && json.Unmarshal(rawID, &id) == nil {
		ev.ID = &id
		return ev, nil
	}
	return ev, intake.Invalid("eventId", "must be a string, not %s", kindOf(rawID))
}

func (s *Service) handleTriggerCreate(w http.ResponseWriter, r *http.Request) {
	p, body, err := s.admit(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req api.TriggerRequest
	if err := decode(body, &req, s.cfg.MaxDepth, "request body"); err != nil {
		s.writeError(w, r, err)
		return
	}
	tr, created, err := s.triggers.Create(r.Context(), p, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	httpserve.WriteJSON(w, createdStatus(created), tr)
}

func (s *Service) handleTriggerGet(w http.ResponseWriter, r *http.Request) {
	p, err := s.authenticate(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	tr, err := s.triggers.Get(r.Context(), p, r.PathValue("triggerId"))
	s.answer(w, r, tr, err)
}

func (s *Service) handleTriggerList(w http.ResponseWriter, r *http.Request) {
	p, err := s.authenticate(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cursor, limit, err := pageQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := s.triggers.List(r.Context(), p, cursor, limit)
	s.answer(w, r, list, err)
}

func (s *Service) handleTriggerDelete(w http.ResponseWriter, r *http.Request) {
	p, err := s.authenticate(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.triggers.Delete(r.Context(), p, r.PathValue("triggerId")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) handleTriggerEvent(w http.ResponseWriter, r *http.Request) {
	p, body, err := s.admit(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var b eventBody
	if err := decode(body, &b, s.cfg.MaxDepth, "request body"); err != nil {
		s.writeError(w, r, err)
		return
	}
	ev, err := event(b.EventID, b.Payload)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, created, err := s.triggerSend(r.Context(), transportHTTP, p, r.PathValue("triggerId"), ev)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Weft-Duplicate", strconv.FormatBool(res.Duplicate))
	httpserve.WriteJSON(w, createdStatus(created), res)
}

// natsTriggerEvent takes in a publish to weft.triggers.<triggerId>.
func (s *Service) natsTriggerEvent(ctx context.Context, m *nats.Msg) (any, int, error) {
	id, ok := strings.CutPrefix(m.Subject, streams.TriggerSubjectPrefix+".")
	if !ok || strings.Contains(id, ".") {
		return nil, 0, &intake.Error{Code: api.CodeInvalidArgument,
			Message: fmt.Sprintf("subject %q is not %s.<triggerId>: the trigger id is one token", m.Subject, streams.TriggerSubjectPrefix)}
	}
	p, err := s.natsAdmit(m)
	if err != nil {
		return nil, 0, err
	}
	var b eventBody
	if err := decode(m.Data, &b, s.cfg.MaxDepth, "message"); err != nil {
		return nil, 0, err
	}
	ev, err := event(b.EventID, b.Payload)
	if err != nil {
		return nil, 0, err
	}
	res, created, err := s.triggerSend(ctx, transportNATS, p, id, ev)
	if err != nil {
		return nil, 0, err
	}
	return duplicateTagged{res, res.Duplicate}, createdStatus(created), nil
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
