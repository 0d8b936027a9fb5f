package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	gateway "github.com/weftrun/weft/services/signal-gateway"
	"github.com/weftrun/weft/services/signal-gateway/internal/jsonrpc"
)

// docURL is the location the document is compiled under, so that its
// "#/components/..." references resolve within it.
const docURL = "https://weft.invalid/openapi.json"

// schemas compiles the schemas of one OpenAPI document.
type schemas struct {
	c *jsonschema.Compiler
}

// newSchemas returns the schemas of the document raw, formats asserted.
func newSchemas(t *testing.T, raw []byte) schemas {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	require.NoError(t, c.AddResource(docURL, doc))
	return schemas{c}
}

// at compiles the schema at the JSON pointer.
func (s schemas) at(t *testing.T, pointer string) *jsonschema.Schema {
	t.Helper()
	sch, err := s.c.Compile(docURL + "#" + pointer)
	require.NoError(t, err, "compiling the schema at %s", pointer)
	return sch
}

// pointerTo is the JSON pointer of the member path of a document.
func pointerTo(path ...string) string {
	var b strings.Builder
	for _, token := range path {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// example is one example of the document and the schema it is of.
type example struct {
	at, schema string // JSON pointers
	value      any
}

// collectExamples returns every example of the document: a media type's
// or a parameter's example and examples (of its schema), and a schema's
// examples.
func collectExamples(t *testing.T, doc map[string]any) []example {
	var found []example
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		switch v := v.(type) {
		case map[string]any:
			found = append(found, examplesOf(t, doc, v, path)...)
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k], append(slices.Clip(path), k))
			}
		case []any:
			for i, e := range v {
				walk(e, append(slices.Clip(path), fmt.Sprint(i)))
			}
		}
	}
	walk(doc, nil)
	return found
}

// examplesOf returns the examples that the object v at path holds itself.
func examplesOf(t *testing.T, doc, v map[string]any, path []string) []example {
	here := pointerTo(path...)
	var found []example
	if list, ok := v["examples"].([]any); ok { // a schema's examples
		for i, e := range list {
			found = append(found, example{at: fmt.Sprintf("%s/examples/%d", here, i), schema: here, value: e})
		}
	}
	if _, ok := v["schema"].(map[string]any); !ok || !mediaTypeOrParameter(v, path) {
		return found
	}
	schema := here + "/schema"
	if e, ok := v["example"]; ok {
		found = append(found, example{at: here + "/example", schema: schema, value: e})
	}
	named, _ := v["examples"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(named)) {
		ex, ok := named[name].(map[string]any)
		require.True(t, ok, "%s/examples/%s is not an object", here, name)
		if ref, isRef := ex["$ref"].(string); isRef {
			ex = resolve(t, doc, ref)
		}
		value, ok := ex["value"]
		require.True(t, ok, "%s/examples/%s has no value", here, name)
		found = append(found, example{at: here + "/examples/" + name, schema: schema, value: value})
	}
	return found
}

// mediaTypeOrParameter reports whether v at path is a media type object
// (a member of a content map) or a parameter object.
func mediaTypeOrParameter(v map[string]any, path []string) bool {
	if len(path) >= 2 && path[len(path)-2] == "content" {
		return true
	}
	_, in := v["in"]
	return in
}

// checkExamples requires every example of the document raw to validate
// against its schema, formats included.
func checkExamples(t *testing.T, raw []byte) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw)) // numbers as json.Number, as Validate takes them
	require.NoError(t, err)
	found := collectExamples(t, doc.(map[string]any))
	require.Greater(t, len(found), 30, "the document's examples are found")
	s := newSchemas(t, raw)
	for _, ex := range found {
		require.NoError(t, s.at(t, ex.schema).Validate(ex.value), "the example at %s is not valid against its schema", ex.at)
	}
}

// checkComponents requires every component to be reachable from the
// paths, through $refs (a security scheme: named by a security
// requirement), and no schema to use the OpenAPI 3.0 keyword nullable.
func checkComponents(t *testing.T, doc map[string]any) {
	used := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			require.NotContains(t, v, "nullable", "OpenAPI 3.1 writes a nullable type as a type array")
			if ref, ok := v["$ref"].(string); ok && !used[ref] {
				used[ref] = true
				walk(resolve(t, doc, ref))
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc["paths"])
	requirements := asList(doc["security"])
	for _, op := range operations(t, doc) {
		requirements = append(requirements, asList(op["security"])...)
	}
	for _, req := range requirements {
		for name := range req.(map[string]any) {
			used["#/components/securitySchemes/"+name] = true
		}
	}
	for kind, members := range object(t, doc, "components") {
		for name := range members.(map[string]any) {
			require.True(t, used["#/components/"+kind+"/"+name], "component %s/%s is not used", kind, name)
		}
	}
}

// checkOperations requires every operation to have a unique operationId,
// a summary and a description, tags the document defines, and, when it
// needs a key, a 401 among its 4xx responses; every tag to be used; and
// the document to name a server.
func checkOperations(t *testing.T, doc map[string]any) {
	require.NotEmpty(t, asList(doc["servers"]), "servers")
	defined := map[string]bool{}
	for _, tag := range asList(doc["tags"]) {
		tag := tag.(map[string]any)
		require.NotEmpty(t, tag["description"], "tag %v", tag["name"])
		defined[tag["name"].(string)] = true
	}
	ids, tagged := map[string]string{}, map[string]bool{}
	for route, op := range operations(t, doc) {
		id, _ := op["operationId"].(string)
		require.NotEmpty(t, id, "%s has no operationId", route)
		require.NotContains(t, ids, id, "%s and %s share operationId %s", route, ids[id], id)
		ids[id] = route
		require.NotEmpty(t, op["summary"], "%s has no summary", route)
		require.NotEmpty(t, op["description"], "%s has no description", route)
		require.NotEmpty(t, asList(op["tags"]), "%s has no tag", route)
		for _, tag := range asList(op["tags"]) {
			require.True(t, defined[tag.(string)], "%s: tag %v is not defined", route, tag)
			tagged[tag.(string)] = true
		}
		responses := object(t, op, "responses")
		if security, ok := op["security"]; ok && len(asList(security)) == 0 {
			continue // no key: answered alike whatever the request
		}
		require.Contains(t, responses, "401", "%s needs a key but documents no 401", route)
	}
	for tag := range defined {
		require.True(t, tagged[tag], "tag %s is not used", tag)
	}
}

// operations returns the document's operations by "METHOD path".
func operations(t *testing.T, doc map[string]any) map[string]map[string]any {
	ops := map[string]map[string]any{}
	for path, item := range object(t, doc, "paths") {
		for _, m := range httpMethods {
			if op, ok := item.(map[string]any)[m].(map[string]any); ok {
				ops[strings.ToUpper(m)+" "+path] = op
			}
		}
	}
	return ops
}

// resolve returns the object a "#/components/..." $ref points at.
func resolve(t *testing.T, doc map[string]any, ref string) map[string]any {
	t.Helper()
	pointer, ok := strings.CutPrefix(ref, "#/")
	require.True(t, ok, "$ref %q is not local", ref)
	var at any = doc
	for _, token := range strings.Split(pointer, "/") {
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		m, isObject := at.(map[string]any)
		require.True(t, isObject, "$ref %q: %q is not inside an object", ref, token)
		at, ok = m[token]
		require.True(t, ok, "$ref %q does not resolve: no %q", ref, token)
	}
	m, ok := at.(map[string]any)
	require.True(t, ok, "$ref %q is not an object", ref)
	return m
}

// asList returns v as a JSON array, nil when it is not one.
func asList(v any) []any {
	list, _ := v.([]any)
	return list
}

// TestOpenAPINoParamsBody holds pause and resume to the body the document
// gives them: optional, and an object without members. A body the schema
// takes is answered 200, one it refuses 400; each answer is documented.
func TestOpenAPINoParamsBody(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	raw, err := os.ReadFile("openapi.json")
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	a := s.post(t, "/v1/schedules", scheduleBody("nightly"))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.body)

	for _, action := range []string{"pause", "resume"} {
		tmpl := "/v1/schedules/{scheduleId}/" + action
		op := object(t, object(t, object(t, doc, "paths"), tmpl), "post")
		ref, _ := object(t, op, "requestBody")["$ref"].(string)
		body := resolve(t, doc, ref)
		require.Equal(t, false, body["required"], "%s: the body is optional", tmpl)
		sch := newSchemas(t, raw).at(t, strings.TrimPrefix(ref, "#")+"/content/application~1json/schema")

		for _, tc := range []struct {
			body string
			want int
		}{
			{"", http.StatusOK}, // no body
			{"{}", http.StatusOK},
			{" { } ", http.StatusOK},
			{`{"now":true}`, http.StatusBadRequest},
			{`{"scheduleId":"nightly"}`, http.StatusBadRequest},
			{`[]`, http.StatusBadRequest},
			{`"x"`, http.StatusBadRequest},
			{`null`, http.StatusBadRequest},
		} {
			var sent []byte
			if tc.body != "" {
				sent = []byte(tc.body)
				v, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.body))
				require.NoError(t, err)
				require.Equal(t, tc.want == http.StatusOK, sch.Validate(v) == nil, "%s: the schema on %s", tmpl, tc.body)
			}
			a, err := s.do(t, http.MethodPost, "/v1/schedules/nightly/"+action, operatorToken, sent)
			require.NoError(t, err)
			require.Equal(t, tc.want, a.status, "%s with %q: %s", tmpl, tc.body, a.body)
			require.Contains(t, object(t, op, "responses"), strconv.Itoa(a.status), tmpl)
			if tc.want == http.StatusOK {
				require.Equal(t, action == "pause", decodeAs[api.Schedule](t, a.body).Paused, "%s with %q", tmpl, tc.body)
			} else {
				require.Equal(t, api.CodeInvalidArgument, a.errorBody(t).Code, "%s with %q: %s", tmpl, tc.body, a.body)
			}
		}
		a, err := s.do(t, http.MethodPost, "/v1/schedules/nightly/"+action, operatorToken, []byte("{}"), "Content-Type", "text/plain")
		require.NoError(t, err)
		require.Equal(t, http.StatusUnsupportedMediaType, a.status, "%s: a body is declared JSON: %s", tmpl, a.body)
		require.Contains(t, object(t, op, "responses"), "415", tmpl)
	}
}

// TestOpenAPIParamsAnObject holds every JSON-RPC method to the document's
// params, an object: params that are an array are refused with -32602
// and InvalidArgument, whatever the method.
func TestOpenAPIParamsAnObject(t *testing.T) {
	t.Parallel()
	s := setup(t, gateway.Config{DisableScheduler: true})
	raw, err := os.ReadFile("openapi.json")
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	pointer := "/components/schemas/JsonRpcRequest/properties"
	request := resolve(t, doc, "#"+pointer)
	methods := asList(object(t, request, "method")["examples"])
	require.Len(t, methods, 14, "the document lists every method")
	sch := newSchemas(t, raw).at(t, pointer+"/params")

	for _, params := range []string{`[]`, `["nightly"]`, `[{"scheduleId":"nightly"}]`} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(params))
		require.NoError(t, err)
		require.Error(t, sch.Validate(v), "the document refuses params %s", params)
		for _, m := range methods {
			r := s.rpcOne(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s,"id":1}`, m, params))
			require.NotNil(t, r.Error, "%s with params %s", m, params)
			require.Equal(t, jsonrpc.CodeInvalidParams, r.Error.Code, "%s with params %s: %s", m, params, r.Error.Message)
			require.Equal(t, api.CodeInvalidArgument, r.Error.Data.Code, "%s with params %s", m, params)
		}
	}
}
