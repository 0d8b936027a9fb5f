package readapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/projector/internal/ui"
)

// Handler returns the read API (docs/read-api.md) and its OpenAPI
// document (GET /openapi.json, no key needed), the UI's forwarding to
// the gateway (its signals; the schedules list, pause, resume and delete;
// the triggers list; the registered plans, their archive and restore, and
// starts by planRef) and the UI itself. It serves no /metrics: the
// metrics count every tenant's runs and go to the Meter, whose provider
// the command serves on its ops listener only.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, route := range readRoutes {
		mux.HandleFunc(route.pattern, a.authed(route))
	}
	mux.HandleFunc("GET /openapi.json", serveOpenAPI)
	gateway := a.gatewayProxy()
	mux.Handle("POST /gateway/v1/runs/{runId}/signals", gateway)
	mux.Handle("POST /gateway/v1/runs/{runId}/rerun", gateway)
	mux.Handle("GET /gateway/v1/schedules", gateway)
	mux.Handle("POST /gateway/v1/schedules/{scheduleId}/pause", gateway)
	mux.Handle("POST /gateway/v1/schedules/{scheduleId}/resume", gateway)
	mux.Handle("DELETE /gateway/v1/schedules/{scheduleId}", gateway)
	mux.Handle("GET /gateway/v1/triggers", gateway)
	mux.Handle("GET /gateway/v1/plans", gateway)
	mux.Handle("GET /gateway/v1/plans/{planId}", gateway)
	mux.Handle("GET /gateway/v1/plans/{planId}/versions/{planVersion}", gateway)
	mux.Handle("POST /gateway/v1/plans/{planId}/versions/{planVersion}/archive", gateway)
	mux.Handle("POST /gateway/v1/plans/{planId}/versions/{planVersion}/restore", gateway)
	mux.Handle("POST /gateway/v1/runs", gateway)
	mux.Handle("POST /gateway/v1/bulk", gateway)
	mux.Handle("GET /gateway/v1/bulk/{bulkId}", gateway)
	mux.Handle("POST /gateway/v1/bulk/{bulkId}/cancel", gateway)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		httpserve.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("/v1/", a.notServed)
	mux.Handle("/", ui.Handler(ui.Options{DevTokenFile: a.cfg.DevTokenFile}))
	return mux
}

// authed authenticates the request's API key, holds it to its request
// rate (Config.KeyRate), checks that it may read runs of its tenant and
// that the query holds only the route's parameters (checkQuery) before
// calling the route's handler.
func (a *API) authed(route readRoute) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := a.cfg.Keys.AuthenticateValues(r.Header.Values("Authorization"))
		if errors.Is(err, auth.ErrMultipleCredentials) {
			writeError(w, http.StatusBadRequest, api.CodeInvalidArgument, err.Error())
			return
		}
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="weft"`)
			writeError(w, http.StatusUnauthorized, api.CodeUnauthenticated, err.Error())
			return
		}
		if ok, wait := a.rate.Allow(p.KeyID, 1); !ok {
			a.refuse(w, r, p, refusedRate, wait,
				fmt.Sprintf("API key %q is over its read rate of %s", p.KeyID, a.rate.Limit()))
			return
		}
		if d := a.cfg.Authorizer.Authorize(r.Context(), p, auth.ActionRunRead, auth.Resource{TenantID: p.TenantID}); !d.Allowed {
			writeError(w, http.StatusForbidden, api.CodePermissionDenied, d.Reason)
			return
		}
		if checkQuery(w, r, route) {
			route.handle(a, w, r, p)
		}
	}
}

// runIDOf returns the request's {runId}, or answers 400 and returns false.
func runIDOf(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("runId")
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		writeError(w, http.StatusBadRequest, api.CodeInvalidArgument, "runId must be a run id (a lowercase UUID)")
		return "", false
	}
	return id, true
}

// writeError answers in the Weft error shape (docs/api.md).
func writeError(w http.ResponseWriter, status int, code, message string) {
	httpserve.WriteJSON(w, status, api.ErrorBody{Error: api.Error{Code: code, Message: message}})
}

// refuse answers 429 RateLimited with Retry-After and details.retryAfter
// (whole seconds, at least 1) and counts the refusal by reason.
func (a *API) refuse(w http.ResponseWriter, r *http.Request, p auth.Principal, reason string, wait time.Duration, msg string) {
	a.metrics.refused.Add(r.Context(), 1, metric.WithAttributes(
		attribute.String("reason", reason), attribute.String("key", p.KeyID)))
	secs := max(1, int((wait+time.Second-1)/time.Second))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	httpserve.WriteJSON(w, http.StatusTooManyRequests, api.ErrorBody{Error: api.Error{
		Code: api.CodeRateLimited, Message: msg, Details: map[string]any{"retryAfter": secs}}})
}

// chargeSteps takes from p's key the rest of a read's cost once it knows
// the read answers steps steps: one token per Config.StepsPerToken steps
// past the first StepsPerToken (the request's own token was taken by
// authed), so that a key reading big answers reaches its rate sooner. It
// answers 429 RateLimited with the Retry-After those tokens need, and
// returns false, when the key's bucket does not hold them; the answer is
// not sent.
func (a *API) chargeSteps(w http.ResponseWriter, r *http.Request, p auth.Principal, steps int) bool {
	extra := a.stepsCost(steps)
	if extra == 0 {
		return true
	}
	ok, wait := a.rate.Allow(p.KeyID, extra)
	if !ok {
		a.refuse(w, r, p, refusedRate, wait, fmt.Sprintf(
			"API key %q is over its read rate of %s: an answer of %d steps costs %d requests (one more per %d steps past the first %d)",
			p.KeyID, a.rate.Limit(), steps, 1+extra, a.cfg.StepsPerToken, a.cfg.StepsPerToken))
	}
	return ok
}

// stepsCost is the tokens, beyond the request's own, that an answer of
// steps steps costs: ceil(steps/StepsPerToken) - 1, at least 0.
func (a *API) stepsCost(steps int) int { return max(0, steps-1) / a.cfg.StepsPerToken }

// writeFault answers a failure of the projector itself: 503 when the
// request was cancelled, else 500 with a correlation id that is logged
// with the error.
func (a *API) writeFault(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) || r.Context().Err() != nil {
		writeError(w, http.StatusServiceUnavailable, api.CodeUnavailable, "the request was cancelled")
		return
	}
	id := uuid.NewString()
	a.logger.ErrorContext(r.Context(), "projector: request failed", "correlation_id", id, "err", err)
	httpserve.WriteJSON(w, http.StatusInternalServerError, api.ErrorBody{Error: api.Error{
		Code: api.CodeInternal, Message: "internal error", Details: map[string]any{"correlationId": id}}})
}

// gatewayProxy forwards the UI's gateway calls (signals, schedules,
// triggers) to the gateway, unchanged (Authorization included): the gateway
// authenticates and decides.
func (a *API) gatewayProxy() http.Handler {
	if a.cfg.GatewayURL == "" {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusServiceUnavailable, api.CodeUnavailable,
				"no gateway configured for the UI's signals and schedules (set WEFT_GATEWAY_URL)")
		})
	}
	target, _ := url.Parse(a.cfg.GatewayURL) // an http or https URL with a host (Config)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			a.logger.WarnContext(r.Context(), "projector: gateway unreachable", "err", err)
			writeError(w, http.StatusBadGateway, api.CodeUnavailable, "the gateway is unreachable; retry")
		},
	}
	return http.StripPrefix("/gateway", proxy)
}
