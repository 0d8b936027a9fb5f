package gateway

import (
	_ "embed"
	"net/http"

	"github.com/weftrun/weft/internal/boot/httpserve"
)

// openAPI is the gateway's OpenAPI 3.1 document, kept by hand beside
// docs/api.md; TestOpenAPIDocument checks the two agree on the routes.
//
//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	httpserve.WriteRaw(w, http.StatusOK, openAPI)
}
