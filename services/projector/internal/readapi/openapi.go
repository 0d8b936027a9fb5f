package readapi

import (
	_ "embed"
	"net/http"

	"github.com/weftrun/weft/internal/boot/httpserve"
)

// openAPI is the read API's OpenAPI 3.1 document, kept by hand beside
// docs/read-api.md; the projector's TestOpenAPIDocument checks it against
// the live server: its routes, their query parameters (Routes), their
// statuses and the schemas of their answers.
//
//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	httpserve.WriteRaw(w, http.StatusOK, openAPI)
}
