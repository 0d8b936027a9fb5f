package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/weftrun/weft/internal/auth"
	"github.com/weftrun/weft/internal/httpserve"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// route is one endpoint of the HTTP API.
type route struct {
	method, pattern string
	handle          http.HandlerFunc
}

// routes are the gateway's endpoints (docs/api.md, openapi.json).
func (s *Service) routes() []route {
	return []route{
		{http.MethodPost, "/v1/runs", s.handleRunStart},
		{http.MethodPost, "/v1/runs/{runId}/signals", s.handleSignalSend},
		{http.MethodPost, "/v1/schedules", s.handleScheduleCreate},
		{http.MethodGet, "/v1/schedules", s.handleScheduleList},
		{http.MethodGet, "/v1/schedules/{scheduleId}", s.handleScheduleGet},
		{http.MethodPut, "/v1/schedules/{scheduleId}", s.handleScheduleUpdate},
		{http.MethodDelete, "/v1/schedules/{scheduleId}", s.handleScheduleDelete},
		{http.MethodPost, "/v1/schedules/{scheduleId}/pause", s.handleSchedulePause},
		{http.MethodPost, "/v1/schedules/{scheduleId}/resume", s.handleScheduleResume},
		{http.MethodPost, "/v1/triggers", s.handleTriggerCreate},
		{http.MethodGet, "/v1/triggers", s.handleTriggerList},
		{http.MethodGet, "/v1/triggers/{triggerId}", s.handleTriggerGet},
		{http.MethodDelete, "/v1/triggers/{triggerId}", s.handleTriggerDelete},
		{http.MethodPost, "/v1/triggers/{triggerId}/events", s.handleTriggerEvent},
		{http.MethodPost, "/rpc", s.handleRPC},
		{http.MethodGet, "/openapi.json", serveOpenAPI},
		{http.MethodGet, "/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }},
	}
}

// Handler returns the gateway's HTTP handler (docs/api.md). Each request
// but the probes runs under a span (Config.TracerProvider). A known path
// asked with another method is answered 405 with an Allow header.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	var paths []string
	allow := map[string][]string{}
	for _, r := range s.routes() {
		mux.HandleFunc(r.method+" "+r.pattern, r.handle)
		if allow[r.pattern] == nil {
			paths = append(paths, r.pattern)
		}
		allow[r.pattern] = append(allow[r.pattern], r.method)
	}
	for _, p := range paths {
		if p != "/healthz" {
			mux.HandleFunc(p, s.methodNotAllowed(strings.Join(allow[p], ", ")))
		}
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, &intake.Error{Code: api.CodeNotFound, Message: "no such endpoint: " + r.URL.Path})
	})
	return s.traced(mux)
}

// methodNotAllowed answers 405 naming the methods allow.
func (s *Service) methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		s.writeError(w, r, &intake.Error{Code: api.CodeMethodNotAllowed, Message: r.Method + " is not allowed here; use " + allow})
	}
}

func (s *Service) handleRunStart(w http.ResponseWriter, r *http.Request) {
	p, body, err := s.admit(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req, err := decodeStart(body, s.cfg.MaxDepth, "request body")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.intake.RunStart(r.Context(), p, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	w.Header().Set("Weft-Duplicate", strconv.FormatBool(res.Duplicate))
	httpserve.WriteJSON(w, status, res.StartRunResult)
}

func (s *Service) handleSignalSend(w http.ResponseWriter, r *http.Request) {
	p, body, err := s.admit(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var b signalBody
	if err := decode(body, &b, s.cfg.MaxDepth, "request body"); err != nil {
		s.writeError(w, r, err)
		return
	}
	runID := r.PathValue("runId")
	if _, err := events.ParseRunID(runID); err != nil { // named as the path names it, not workflowId
		s.writeError(w, r, &intake.Error{Code: api.CodeInvalidArgument, Details: map[string]any{"field": "runId"},
			Message: fmt.Sprintf("runId must be a run id (a UUID in canonical, lowercase form), not %q", runID)})
		return
	}
	sig, err := signal(runID, b.SignalName, b.SignalID, b.Payload)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.signalSend(r.Context(), transportHTTP, p, sig)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Weft-Duplicate", strconv.FormatBool(res.Duplicate))
	httpserve.WriteJSON(w, http.StatusAccepted, res.AcceptedSignalResult)
}

// admit authenticates r, checks its content type and reads its body
// within the limit, in that order: an unauthenticated request is refused
// before its body is read.
func (s *Service) admit(r *http.Request) (auth.Principal, []byte, error) {
	p, err := s.cfg.Keys.Authenticate(r.Header.Get("Authorization"))
	if err != nil {
		return auth.Principal{}, nil, &intake.Error{Code: api.CodeUnauthenticated, Message: err.Error()}
	}
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return p, nil, err
	}
	body, err := s.readBody(r)
	return p, body, err
}

// readBody reads r's body, refusing one over MaxBodyBytes whether or not
// it declared its length.
func (s *Service) readBody(r *http.Request) ([]byte, error) {
	limit := s.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, &intake.Error{Code: api.CodeInvalidArgument, Message: "reading the body failed: " + err.Error()}
	}
	if int64(len(body)) > limit {
		return nil, tooLarge(limit)
	}
	return body, nil
}

// writeError answers err in the REST error shape. An error that is not an
// *intake.Error is a fault of the gateway: it is logged with a
// correlation id, and the caller gets that id, never the error's text.
func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := s.refusal(r.Context(), err)
	if e.Code == api.CodeUnauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer realm="weft"`)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", retryAfterHeader(e))
	}
	httpserve.WriteJSON(w, statusOf(e.Code), api.ErrorBody{Error: e.API()})
}

// refusal returns err as an *intake.Error, turning a fault into
// CodeInternal (or CodeUnavailable when the request was cancelled).
func (s *Service) refusal(ctx context.Context, err error) *intake.Error {
	if e, ok := errors.AsType[*intake.Error](err); ok {
		return e
	}
	if ctx.Err() != nil {
		return &intake.Error{Code: api.CodeUnavailable, Message: "the request was cancelled; retrying with the same ids is safe"}
	}
	id := events.NewRunID()
	s.logger.ErrorContext(ctx, "request failed", "correlation_id", id, "err", err)
	return &intake.Error{Code: api.CodeInternal, Message: "internal error; retrying with the same ids is safe",
		Details: map[string]any{"correlationId": id}}
}
