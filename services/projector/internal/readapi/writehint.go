package readapi

import (
	"net/http"
	"strings"

	"github.com/weftrun/weft/internal/boot/httpserve"
	"github.com/weftrun/weft/pkg/api"
)

// notServed answers 404 for a /v1/ route the read API does not serve. The
// read API only reads: a request of another method (POST /v1/runs, say)
// is told that the gateway serves writes, and where when
// Config.GatewayURL is set (details.gateway: the same request there).
func (a *API) notServed(w http.ResponseWriter, r *http.Request) {
	e := api.Error{Code: api.CodeNotFound, Message: "no such route: " + r.Method + " " + r.URL.Path}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		e.Message += ": the read API (weft projector) serves reads only; writes go to the gateway (weft gateway, docs/api.md)"
		if base := strings.TrimRight(a.cfg.GatewayURL, "/"); base != "" {
			target := base + r.URL.RequestURI()
			e.Message += ": " + r.Method + " " + target
			e.Details = map[string]any{"gateway": target}
		}
	}
	httpserve.WriteJSON(w, http.StatusNotFound, api.ErrorBody{Error: e})
}
