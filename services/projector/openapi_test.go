package projector_test

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/testkit/openapitest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/projector"
)

// metaRoutes are the routes the document describes besides the read
// API's /v1/ ones (projector.ReadRoutes); they need no key.
var metaRoutes = []string{"GET /openapi.json", "GET /healthz"}

// TestOpenAPIDocument checks the served OpenAPI document against the read
// API: its routes and each route's query parameters (from
// projector.ReadRoutes, what the server accepts), the document-level
// checks every document gets (openapitest.Check), and the
// status, headers and body of live answers of every route against what
// the document says of that route and status.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.serve(t, projector.Config{})

	served := s.fetch(t, "", "/openapi.json")
	require.Equal(t, http.StatusOK, served.status)
	require.Equal(t, "application/json", served.header.Get("Content-Type"))
	d := openapitest.Check(t, served.body, "internal/readapi/openapi.json")

	t.Run("routes", func(t *testing.T) { checkRoutes(t, s, d) })
	t.Run("parameters", func(t *testing.T) { checkParameters(t, d) })
	v := &docValidator{doc: d}
	t.Run("answers", func(t *testing.T) { checkAnswers(t, s, v) })
	t.Run("rate limited", func(t *testing.T) { checkRateLimited(t, v) })
}

// checkRoutes requires the document's operations to be the read API's
// routes and the meta routes, and no other method of a documented path to
// be served.
func checkRoutes(t *testing.T, s *stack, d *openapitest.Doc) {
	want := append(slices.Collect(maps.Keys(projector.ReadRoutes())), metaRoutes...)
	require.ElementsMatch(t, want, slices.Collect(maps.Keys(d.Operations())))

	for tmpl := range openapitest.Object(t, d.Tree, "paths") {
		if !strings.HasPrefix(tmpl, "/v1/") {
			continue
		}
		path := strings.NewReplacer("{runId}", uuid.NewString(), "{stepId}", "a").Replace(tmpl)
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			r := s.do(t, m, path, "{}", "Authorization", "Bearer "+readerToken)
			requireError(t, r, http.StatusNotFound, api.CodeNotFound, "no such route: "+m)
		}
	}
}

// checkParameters requires each read API route's documented query
// parameters to be exactly those the server accepts, a repeatable one
// documented as an array and no other; every path template's variables
// to be documented path parameters; and the status filter's values to be
// those the server accepts.
func checkParameters(t *testing.T, d *openapitest.Doc) {
	for route, accepted := range projector.ReadRoutes() {
		_, tmpl, _ := strings.Cut(route, " ")
		op := openapitest.Object(t, openapitest.Object(t, openapitest.Object(t, d.Tree, "paths"), tmpl), "get")
		query := map[string]bool{} // name: documented as an array
		var pathVars []string
		params, _ := op["parameters"].([]any)
		for _, raw := range params {
			p := d.Resolve(t, raw)
			switch p["in"] {
			case "query":
				query[p["name"].(string)] = openapitest.Object(t, p, "schema")["type"] == "array"
			case "path":
				require.Equal(t, true, p["required"], "%s: path parameter %v", route, p["name"])
				pathVars = append(pathVars, "{"+p["name"].(string)+"}")
			}
		}
		want := map[string]bool{}
		for _, p := range accepted {
			want[p.Name] = p.Repeatable
		}
		require.Equal(t, want, query, "%s: the documented query parameters (true: repeatable)", route)
		var inPath []string
		for seg := range strings.SplitSeq(tmpl, "/") {
			if strings.HasPrefix(seg, "{") {
				inPath = append(inPath, seg)
			}
		}
		require.ElementsMatch(t, inPath, pathVars, "%s: path parameters", route)
	}
	filter := openapitest.Object(t, openapitest.Object(t, openapitest.Object(t, d.Tree, "components"), "schemas"), "StatusFilter")
	var values []string
	for _, v := range filter["enum"].([]any) {
		values = append(values, v.(string))
	}
	require.ElementsMatch(t, projector.StatusFilters(), values, "the status filter's values")
}

// docValidator checks answers against the document's responses.
type docValidator struct{ doc *openapitest.Doc }

// check requires r, an answer of route, to be one of the route's
// documented statuses, to carry the headers documented for it, and to
// have no body when the document gives it none, else one that is valid
// against the documented schema.
func (v *docValidator) check(t *testing.T, route string, r reply) {
	t.Helper()
	method, tmpl, _ := strings.Cut(route, " ")
	status := strconv.Itoa(r.status)
	op := v.doc.Operations()[route]
	require.NotNil(t, op, "%s is not in the document", route)
	responses := openapitest.Object(t, op, "responses")
	raw, documented := responses[status]
	require.True(t, documented, "%s answered %d, which the document does not list: %s", route, r.status, r.body)
	pointer := "#" + openapitest.PointerTo("paths", tmpl, strings.ToLower(method), "responses", status)
	resp := raw.(map[string]any)
	if ref, ok := resp["$ref"].(string); ok {
		pointer, resp = ref, v.doc.Resolve(t, resp)
	}
	headers, _ := resp["headers"].(map[string]any)
	for name := range headers {
		require.NotEmpty(t, r.header.Get(name), "%s answered %d without its documented %s header", route, r.status, name)
	}
	if _, has := resp["content"]; !has {
		require.Empty(t, r.body, "%s answered %d with a body the document does not give it", route, r.status)
		return
	}
	require.Equal(t, "application/json", r.header.Get("Content-Type"), "%s answered %d", route, r.status)
	v.doc.Validate(t, pointer+openapitest.PointerTo("content", "application/json", "schema"), r.body,
		"%s answered %d: %s", route, r.status, r.body)
}
