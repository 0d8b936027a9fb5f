package projector_test

import (
	"bytes"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v6"
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
	d := openapitest.Check(t, served.body, "openapi.json")
	doc := d.Tree
	onDisk := served.body

	t.Run("routes", func(t *testing.T) { checkRoutes(t, s, doc) })
	t.Run("parameters", func(t *testing.T) { checkParameters(t, doc) })
	v := newDocValidator(t, onDisk, doc)
	t.Run("answers", func(t *testing.T) { checkAnswers(t, s, v) })
	t.Run("rate limited", func(t *testing.T) { checkRateLimited(t, v) })
}

// checkRoutes requires the document's operations to be the read API's
// routes and the meta routes, and no other method of a documented path to
// be served.
func checkRoutes(t *testing.T, s *stack, doc map[string]any) {
	paths := object(t, doc, "paths")
	var documented []string
	for path, item := range paths {
		for _, m := range []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"} {
			if _, ok := item.(map[string]any)[m]; ok {
				documented = append(documented, strings.ToUpper(m)+" "+path)
			}
		}
	}
	want := append(slices.Collect(maps.Keys(projector.ReadRoutes())), metaRoutes...)
	require.ElementsMatch(t, want, documented)

	for tmpl := range paths {
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
func checkParameters(t *testing.T, doc map[string]any) {
	for route, accepted := range projector.ReadRoutes() {
		_, tmpl, _ := strings.Cut(route, " ")
		op := object(t, object(t, object(t, doc, "paths"), tmpl), "get")
		query := map[string]bool{} // name: documented as an array
		var pathVars []string
		params, _ := op["parameters"].([]any)
		for _, raw := range params {
			p := resolve(t, doc, raw)
			switch p["in"] {
			case "query":
				query[p["name"].(string)] = object(t, p, "schema")["type"] == "array"
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
	filter := object(t, object(t, object(t, doc, "components"), "schemas"), "StatusFilter")
	var values []string
	for _, v := range filter["enum"].([]any) {
		values = append(values, v.(string))
	}
	require.ElementsMatch(t, projector.StatusFilters(), values, "the status filter's values")
}

// resolve returns v, a JSON object, or the component its $ref names.
func resolve(t *testing.T, doc map[string]any, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	require.True(t, ok, "%v is not an object", v)
	ref, ok := m["$ref"].(string)
	if !ok {
		return m
	}
	pointer, ok := strings.CutPrefix(ref, "#/")
	require.True(t, ok, "$ref %q is not local", ref)
	var at any = doc
	for _, token := range strings.Split(pointer, "/") {
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		at = object(t, at, token)
	}
	return at.(map[string]any)
}

// object returns the member key of m, which must be a JSON object.
func object(t *testing.T, m any, key string) map[string]any {
	t.Helper()
	parent, ok := m.(map[string]any)
	require.True(t, ok, "not an object where %q is looked up", key)
	v, ok := parent[key].(map[string]any)
	require.True(t, ok, "%q is missing or not an object", key)
	return v
}

// docValidator checks answers against the document's responses.
type docValidator struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
}

// docURL names the document for the schema compiler; nothing is fetched.
const docURL = "https://weft.invalid/read-api/openapi.json"

func newDocValidator(t *testing.T, raw []byte, doc map[string]any) *docValidator {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	require.NoError(t, c.AddResource(docURL, inst))
	return &docValidator{doc: doc, compiler: c}
}

// check requires r, an answer of route, to be one of the route's
// documented statuses, to carry the headers documented for it, and to
// have no body when the document gives it none, else one that is valid
// against the documented schema.
func (v *docValidator) check(t *testing.T, route string, r reply) {
	t.Helper()
	method, tmpl, _ := strings.Cut(route, " ")
	status := strconv.Itoa(r.status)
	responses := object(t, object(t, object(t, object(t, v.doc, "paths"), tmpl), strings.ToLower(method)), "responses")
	raw, documented := responses[status]
	require.True(t, documented, "%s answered %d, which the document does not list: %s", route, r.status, r.body)
	pointer := "#/paths/" + pointerToken(tmpl) + "/" + strings.ToLower(method) + "/responses/" + status
	resp := raw.(map[string]any)
	if ref, ok := resp["$ref"].(string); ok {
		pointer, resp = ref, resolve(t, v.doc, resp)
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
	schema, err := v.compiler.Compile(docURL + pointer + "/content/application~1json/schema")
	require.NoError(t, err)
	body, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.body))
	require.NoError(t, err, "%s answered %d: %s", route, r.status, r.body)
	require.NoError(t, schema.Validate(body), "%s answered %d: %s", route, r.status, r.body)
}

// pointerToken escapes s as a JSON pointer token (RFC 6901).
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
