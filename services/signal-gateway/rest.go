package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
	"github.com/weftrun/weft/services/signal-gateway/internal/page"
)

// route is one endpoint of the HTTP API.
type route struct {
	method, pattern string
	handle          http.HandlerFunc
}

// routes are the gateway's endpoints (docs/api.md, openapi.json).
func (s *Service) routes() []route {
	return []route{
		{http.MethodPost, "/v1/runs", s.rest(jsonBody, s.restRunStart)},
		{http.MethodPost, "/v1/runs/{runId}/signals", s.rest(jsonBody, s.restSignalSend)},
		{http.MethodPost, "/v1/runs/{runId}/rerun", s.rest(jsonBody, s.restRerun)},
		{http.MethodPost, "/v1/bulk", s.rest(jsonBody, s.restBulkStart)},
		{http.MethodGet, "/v1/bulk/{bulkId}", s.rest(noBody, s.restBulkGet)},
		{http.MethodPost, "/v1/bulk/{bulkId}/cancel", s.rest(noBody, s.restBulkCancel)},
		{http.MethodPost, "/v1/schedules", s.rest(jsonBody, s.restScheduleCreate)},
		{http.MethodGet, "/v1/schedules", s.rest(noBody, s.restScheduleList)},
		{http.MethodGet, "/v1/schedules/{scheduleId}", s.rest(noBody, s.restScheduleGet)},
		{http.MethodPut, "/v1/schedules/{scheduleId}", s.rest(jsonBody, s.restScheduleUpdate)},
		{http.MethodDelete, "/v1/schedules/{scheduleId}", s.rest(noBody, s.restScheduleDelete)},
		{http.MethodPost, "/v1/schedules/{scheduleId}/pause", s.rest(emptyBody, s.restSchedulePause)},
		{http.MethodPost, "/v1/schedules/{scheduleId}/resume", s.rest(emptyBody, s.restScheduleResume)},
		{http.MethodPost, "/v1/plans", s.rest(jsonBody, s.restPlanPush)},
		{http.MethodGet, "/v1/plans", s.rest(noBody, s.restPlanList)},
		{http.MethodGet, "/v1/plans/{planId}", s.rest(noBody, s.restPlanGet)},
		{http.MethodGet, "/v1/plans/{planId}/versions/{planVersion}", s.rest(noBody, s.restPlanVersionGet)},
		{http.MethodPost, "/v1/plans/{planId}/versions/{planVersion}/archive", s.rest(emptyBody, s.restPlanArchive)},
		{http.MethodPost, "/v1/plans/{planId}/versions/{planVersion}/restore", s.rest(emptyBody, s.restPlanRestore)},
		{http.MethodPost, "/v1/triggers", s.rest(jsonBody, s.restTriggerCreate)},
		{http.MethodGet, "/v1/triggers", s.rest(noBody, s.restTriggerList)},
		{http.MethodGet, "/v1/triggers/{triggerId}", s.rest(noBody, s.restTriggerGet)},
		{http.MethodDelete, "/v1/triggers/{triggerId}", s.rest(noBody, s.restTriggerDelete)},
		{http.MethodPost, "/v1/triggers/{triggerId}/events", s.rest(jsonBody, s.restTriggerEvent)},
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
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.writeError(w, r, s.notServed(r)) })
	return s.traced(mux)
}

// methodNotAllowed answers 405 naming the methods allow.
func (s *Service) methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/runs" && readRequest(r) { // a list of runs, not a start
			s.writeError(w, r, s.notServed(r))
			return
		}
		w.Header().Set("Allow", allow)
		s.writeError(w, r, &intake.Error{Code: api.CodeMethodNotAllowed, Message: r.Method + " is not allowed here; use " + allow})
	}
}

// The REST endpoints of runs and signals (docs/api.md), served through
// rest.

func (s *Service) restRunStart(r *http.Request, p auth.Principal) (any, error) {
	body, err := s.readBody(r)
	if err != nil {
		return nil, err
	}
	req, err := decodeStart(body, s.cfg.MaxDepth, "request body")
	if err != nil {
		return nil, err
	}
	res, err := s.runStart(r.Context(), p, req)
	if err != nil {
		return nil, err
	}
	return reply{createdStatus(res.Created), duplicateTagged{res.StartRunResult, res.Duplicate}}, nil
}

func (s *Service) restSignalSend(r *http.Request, p auth.Principal) (any, error) {
	b, err := bodyOf[signalBody](s, r)
	if err != nil {
		return nil, err
	}
	runID := r.PathValue("runId")
	if _, err := events.ParseRunID(runID); err != nil { // named as the path names it, not workflowId
		return nil, &intake.Error{Code: api.CodeInvalidArgument, Details: map[string]any{"field": "runId"},
			Message: fmt.Sprintf("runId must be a run id (a UUID in canonical, lowercase form), not %q", runID)}
	}
	sig, err := b.signal(runID)
	if err != nil {
		return nil, err
	}
	res, err := s.signalSend(r.Context(), transportHTTP, p, sig)
	if err != nil {
		return nil, err
	}
	return reply{http.StatusAccepted, duplicateTagged{res.AcceptedSignalResult, res.Duplicate}}, nil
}

// admission is what a REST endpoint requires of a request before its
// handler runs. Each first authenticates the caller, so an
// unauthenticated request is refused before its body is read.
type admission int

const (
	// noBody authenticates the caller; the body is not read.
	noBody admission = iota
	// jsonBody authenticates the caller and checks the content type; the
	// handler reads the body, within the limit, with readBody or bodyOf.
	jsonBody
	// emptyBody admits an action that takes no parameters: its body must
	// be empty or the empty JSON object.
	emptyBody
)

// reply is a REST answer other than 200 with a JSON body: status, and
// body as JSON (none when nil). A duplicateTagged body also sets the
// Weft-Duplicate header.
type reply struct {
	status int
	body   any
}

// rest makes the http.HandlerFunc of a REST endpoint from do, the part
// that is the endpoint's own: the request is admitted as adm says, then
// do runs for the caller p. What do returns is answered as JSON with
// 200, or as its reply says; a refusal or fault, of the admission or of
// do, is answered in the REST error shape (writeError).
func (s *Service) rest(adm admission, do func(r *http.Request, p auth.Principal) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := s.admitAs(adm, r)
		var res any
		if err == nil {
			res, err = do(r, p)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeReply(w, res)
	}
}

// writeReply writes res as rest answers it.
func writeReply(w http.ResponseWriter, res any) {
	rep, ok := res.(reply)
	if !ok {
		rep = reply{http.StatusOK, res}
	}
	if dt, ok := rep.body.(duplicateTagged); ok {
		w.Header().Set(HeaderDuplicate, strconv.FormatBool(dt.duplicate))
		rep.body = dt.result
	}
	if rep.body == nil {
		w.WriteHeader(rep.status)
		return
	}
	httpserve.WriteJSON(w, rep.status, rep.body)
}

// admitAs authenticates r, charges its key one request (Config.KeyRate)
// and checks as much of r as adm asks, in that order.
func (s *Service) admitAs(adm admission, r *http.Request) (auth.Principal, error) {
	p, err := s.authenticate(r.Header.Values("Authorization"))
	if err != nil {
		return auth.Principal{}, err
	}
	if err := s.limitKey(p, 1); err != nil {
		return auth.Principal{}, err
	}
	switch adm {
	case jsonBody:
		return p, checkContentType(r.Header.Get("Content-Type"))
	case emptyBody:
		return p, s.checkEmptyBody(r)
	default:
		return p, nil
	}
}

// admitRPC authenticates r, checks its content type, reads its body
// within the limit and charges its key one request per call of the body
// (rpcCalls; Config.KeyRate), in that order: an unauthenticated request
// is refused before its body is read, a batch past the key's rate before
// any of its calls runs.
func (s *Service) admitRPC(r *http.Request) (auth.Principal, []byte, error) {
	p, err := s.authenticate(r.Header.Values("Authorization"))
	if err != nil {
		return p, nil, err
	}
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return p, nil, err
	}
	body, err := s.readBody(r)
	if err != nil {
		return p, nil, err
	}
	return p, body, s.limitKey(p, rpcCalls(body))
}

// checkEmptyBody requires r's body to be empty or the empty JSON object.
func (s *Service) checkEmptyBody(r *http.Request) error {
	body, err := s.readBody(r)
	if err != nil || len(body) == 0 {
		return err
	}
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	var none struct{}
	return decode(body, &none, s.cfg.MaxDepth, "request body")
}

// bodyOf reads the body of a request admitted with jsonBody, within the
// limit, and decodes it strictly into a B.
func bodyOf[B any](s *Service, r *http.Request) (B, error) {
	var b B
	body, err := s.readBody(r)
	if err != nil {
		return b, err
	}
	return b, decode(body, &b, s.cfg.MaxDepth, "request body")
}

// pageQuery reads a list's ?limit= and ?cursor=; extra names the other
// query parameters the list takes, which the caller reads.
func pageQuery(r *http.Request, extra ...string) (string, int, error) {
	if err := checkQueryNames(r, append([]string{"limit", "cursor"}, extra...)...); err != nil {
		return "", 0, err
	}
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > page.MaxLimit {
			return "", 0, intake.Invalid("limit", "must be a whole number from 1 to %d, not %q", page.MaxLimit, v)
		}
		limit = n
	}
	return q.Get("cursor"), limit, nil
}

// checkQueryNames refuses, as an InvalidArgument naming it, the first
// query parameter of r that is not one of allowed.
func checkQueryNames(r *http.Request, allowed ...string) error {
	for name := range r.URL.Query() {
		if !slices.Contains(allowed, name) {
			return intake.Invalid(name, "is not a query parameter of this endpoint (%s)", strings.Join(allowed, ", "))
		}
	}
	return nil
}

// createdStatus is 201 for a new resource, 200 for a create that found it.
func createdStatus(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
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

// dbRetryAfter is the wait a caller is told after a lost database
// connection: the pool dials a new one at once, and Postgres restarting
// takes seconds.
const dbRetryAfter = time.Second

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
	s.countLimit(r.Context(), transportHTTP, e)
	httpserve.WriteJSON(w, statusOf(e.Code), api.ErrorBody{Error: e.API()})
}

// refusal returns err as an *intake.Error, turning a fault into
// CodeInternal, or CodeUnavailable when the request was cancelled or the
// database connection was lost (intake.ConnectionLost), the latter with
// RetryAfter: intake has already tried once more where nothing had
// committed. A refusal's message and string details are cut to
// Config.MaxErrorMessageBytes (capError).
func (s *Service) refusal(ctx context.Context, err error) *intake.Error {
	if e, ok := errors.AsType[*intake.Error](err); ok {
		return s.capError(e)
	}
	if ctx.Err() != nil {
		return &intake.Error{Code: api.CodeUnavailable, Message: "the request was cancelled; retrying with the same ids is safe"}
	}
	if intake.ConnectionLost(err) {
		s.logger.WarnContext(ctx, "request failed: the database connection was lost", "err", err)
		return &intake.Error{Code: api.CodeUnavailable, RetryAfter: dbRetryAfter,
			Message: "the database connection was lost; retrying with the same ids is safe",
			Details: map[string]any{"retryAfter": int(dbRetryAfter / time.Second)}}
	}
	id := events.NewRunID()
	s.logger.ErrorContext(ctx, "request failed", "correlation_id", id, "err", err)
	return &intake.Error{Code: api.CodeInternal, Message: "internal error; retrying with the same ids is safe",
		Details: map[string]any{"correlationId": id}}
}
