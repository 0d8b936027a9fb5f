package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// Headers of the NATS ingress's replies.
const (
	// HeaderStatus carries the HTTP status the same request would have got.
	HeaderStatus = "Weft-Status"
	// HeaderDuplicate says whether a signal, start or trigger event
	// repeated an earlier one.
	HeaderDuplicate = "Weft-Duplicate"
	// ingressQueue is the queue group every gateway subscribes in, so each
	// publish is taken in by one gateway.
	ingressQueue = "weft-gateway"
)

// subscribe starts the NATS ingress: weft.runs.start,
// weft.signals.<runId>, weft.triggers.<triggerId>, weft.plans.push and
// weft.plans.get, in the queue group
// ingressQueue. A request whose reply subject is not an inbox
// (replyAllowed) is dropped before it is handled. It returns a function
// that drains the subscriptions.
func (s *Service) subscribe(ctx context.Context) (func(), error) {
	var subs []*nats.Subscription
	stop := func() {
		for _, sub := range subs {
			_ = sub.Drain()
		}
	}
	for subject, handle := range map[string]func(context.Context, *nats.Msg) (any, int, error){
		streams.RunStartSubject:             s.natsRunStart,
		streams.SignalSubjectPrefix + ".>":  s.natsSignalSend,
		streams.TriggerSubjectPrefix + ".>": s.natsTriggerEvent,
		streams.PlanPushSubject:             s.natsPlanPush,
		streams.PlanGetSubject:              s.natsPlanGet,
	} {
		sub, err := s.nc.QueueSubscribe(subject, ingressQueue, func(m *nats.Msg) {
			if m.Reply != "" && !s.replyAllowed(m.Reply) {
				s.dropReply(ctx, m)
				return
			}
			hctx, span := s.natsSpan(ctx, m)
			res, status, err := handle(hctx, m)
			s.reply(hctx, m, res, status, err)
			endNATSSpan(span, status, err)
		})
		if err != nil {
			stop()
			return nil, fmt.Errorf("gateway: subscribe %s: %w", subject, err)
		}
		subs = append(subs, sub)
	}
	return stop, nil
}

// natsAdmit authenticates a message by its Authorization header, as HTTP
// does, charges its key one request (Config.KeyRate) and checks its size.
func (s *Service) natsAdmit(m *nats.Msg) (auth.Principal, error) {
	p, err := s.authenticate(m.Header.Values("Authorization"))
	if err != nil {
		return auth.Principal{}, err
	}
	if err := s.limitKey(p, 1); err != nil {
		return auth.Principal{}, err
	}
	if int64(len(m.Data)) > s.cfg.MaxBodyBytes {
		return auth.Principal{}, tooLarge(s.cfg.MaxBodyBytes)
	}
	return p, nil
}

func (s *Service) natsRunStart(ctx context.Context, m *nats.Msg) (any, int, error) {
	p, err := s.natsAdmit(m)
	if err != nil {
		return nil, 0, err
	}
	req, err := decodeStart(m.Data, s.cfg.MaxDepth, "message")
	if err != nil {
		return nil, 0, err
	}
	res, err := s.runStart(ctx, p, req)
	if err != nil {
		return nil, 0, err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return duplicateTagged{res.StartRunResult, res.Duplicate}, status, nil
}

// natsPlanPush registers the plan version an api.PlanPushRequest
// carries, answering as POST /v1/plans: 201, or 200 for a repeat.
func (s *Service) natsPlanPush(ctx context.Context, m *nats.Msg) (any, int, error) {
	req, p, err := natsAdmitBody[api.PlanPushRequest](s, m)
	if err != nil {
		return nil, 0, err
	}
	v, created, err := s.plans.Push(ctx, p, req)
	return v, createdStatus(created), err
}

// natsPlanGet answers the plan a planGetParams names, a page of its
// versions as GET /v1/plans/{planId} does, or, when its planVersion is
// given, that version with its plan, as
// GET /v1/plans/{planId}/versions/{planVersion}; limit and cursor page
// a plan's versions and are refused beside a planVersion.
func (s *Service) natsPlanGet(ctx context.Context, m *nats.Msg) (any, int, error) {
	x, p, err := natsAdmitBody[planGetParams](s, m)
	if err == nil {
		err = requirePlan(x.ProjectID, x.PlanID)
	}
	if err == nil && x.PlanVersion != "" && (x.Limit != 0 || x.Cursor != "") {
		err = intake.Invalid("planVersion", "and limit or cursor are both given: limit and cursor page a plan's versions, planVersion reads one")
	}
	if err != nil {
		return nil, 0, err
	}
	if x.PlanVersion == "" {
		pl, err := s.plans.Get(ctx, p, x.ProjectID, x.PlanID, x.Cursor, x.Limit)
		return pl, http.StatusOK, err
	}
	v, err := s.plans.VersionGet(ctx, p, x.ProjectID, x.PlanID, x.PlanVersion)
	return v, http.StatusOK, err
}

// natsAdmitBody admits a message (natsAdmit) and decodes its body
// strictly into a B.
func natsAdmitBody[B any](s *Service, m *nats.Msg) (b B, p auth.Principal, err error) {
	if p, err = s.natsAdmit(m); err != nil {
		return b, p, err
	}
	err = decode(m.Data, &b, s.cfg.MaxDepth, "message")
	return b, p, err
}

func (s *Service) natsSignalSend(ctx context.Context, m *nats.Msg) (any, int, error) {
	runID, p, b, err := natsAdmitTo[signalBody](s, m, streams.SignalSubjectPrefix, "run")
	if err != nil {
		return nil, 0, err
	}
	sig, err := b.signal(runID)
	if err != nil {
		return nil, 0, err
	}
	res, err := s.signalSend(ctx, transportNATS, p, sig)
	if err != nil {
		return nil, 0, err
	}
	return duplicateTagged{res.AcceptedSignalResult, res.Duplicate}, http.StatusAccepted, nil
}

// natsAdmitTo admits a publish to <prefix>.<id> and decodes its body
// strictly into a B, in that order: the subject must hold one id token,
// then the message must pass natsAdmit. noun says what the id names
// ("run" for a <runId>) in the refusal of a subject that is not one.
func natsAdmitTo[B any](s *Service, m *nats.Msg, prefix, noun string) (id string, p auth.Principal, b B, err error) {
	id, ok := strings.CutPrefix(m.Subject, prefix+".")
	if !ok || strings.Contains(id, ".") {
		return "", p, b, &intake.Error{Code: api.CodeInvalidArgument,
			Message: fmt.Sprintf("subject %q is not %s.<%sId>: the %s id is one token", m.Subject, prefix, noun, noun)}
	}
	if p, err = s.natsAdmit(m); err != nil {
		return "", p, b, err
	}
	return id, p, b, decode(m.Data, &b, s.cfg.MaxDepth, "message")
}

// reply answers a request-reply publish: the result, or the error in the
// REST error shape, with HeaderStatus. A plain publish gets no answer; a
// refusal of one is logged at debug level.
func (s *Service) reply(ctx context.Context, m *nats.Msg, res any, status int, err error) {
	out := nats.NewMsg(m.Reply)
	body := res
	if dt, ok := res.(duplicateTagged); ok {
		body = dt.result
		out.Header.Set(HeaderDuplicate, strconv.FormatBool(dt.duplicate))
	}
	if err != nil {
		e := s.refusal(ctx, err)
		s.countLimit(ctx, transportNATS, e)
		status, body = statusOf(e.Code), api.ErrorBody{Error: e.API()}
		if e.RetryAfter > 0 {
			out.Header.Set("Retry-After", retryAfterHeader(e))
		}
		s.logger.DebugContext(ctx, "ingress refused a message", "subject", m.Subject, "code", e.Code)
	}
	if m.Reply == "" {
		return
	}
	out.Header.Set(HeaderStatus, strconv.Itoa(status))
	out.Data, err = json.Marshal(body)
	if err == nil {
		err = m.RespondMsg(out)
	}
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		s.logger.WarnContext(ctx, "ingress reply failed", "subject", m.Subject, "err", err)
	}
}

// duplicateTagged carries a result with its duplicate flag, which reply
// (NATS) and writeReply (REST) send as HeaderDuplicate.
type duplicateTagged struct {
	result    any
	duplicate bool
}
