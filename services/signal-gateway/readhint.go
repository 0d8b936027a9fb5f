package gateway

import (
	"net/http"
	"strings"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// readPaths are the path prefixes of the read API (the projector's,
// docs/read-api.md). The gateway serves none of their GETs; a user with
// one base URL is told where they are.
var readPaths = []string{"/v1/runs", "/v1/alerts", "/v1/whoami"}

// readRequest reports whether r is a GET (or HEAD) of a read API path.
func readRequest(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	for _, p := range readPaths {
		if r.URL.Path == p || strings.HasPrefix(r.URL.Path, p+"/") {
			return true
		}
	}
	return false
}

// notServed is the 404 of a path the gateway does not serve. For a read
// API request it says that the projector serves reads, and where when
// Config.ReadAPIURL is set (details.readApi: the same request there).
func (s *Service) notServed(r *http.Request) *intake.Error {
	e := &intake.Error{Code: api.CodeNotFound, Message: "no such endpoint: " + r.URL.Path}
	if !readRequest(r) {
		return e
	}
	e.Message += " is a read, served by the read API (weft projector, docs/read-api.md), not the gateway"
	if base := strings.TrimRight(s.cfg.ReadAPIURL, "/"); base != "" {
		target := base + r.URL.RequestURI()
		e.Message += ": GET " + target
		e.Details = map[string]any{"readApi": target}
	}
	return e
}
