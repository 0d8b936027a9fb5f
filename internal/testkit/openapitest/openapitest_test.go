package openapitest_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/testkit/openapitest"
)

const fixture = "testdata/valid.json"

// TestCheck runs every check on a document that passes them all, as a
// service's test does.
func TestCheck(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(fixture)
	require.NoError(t, err)
	d := openapitest.Check(t, raw, fixture)
	found, err := d.Examples()
	require.NoError(t, err)
	var at []string
	for _, ex := range found {
		at = append(at, ex.At)
	}
	require.Equal(t, []string{
		"/components/parameters/Id/example",
		"/components/schemas/Thing/examples/0",
		"/paths/~1things~1{id}/get/responses/200/content/application~1json/examples/small",
	}, at, "every kind of example is found")
}

// TestCheckServed requires the served bytes to be the file's and the file
// to be pretty-printed.
func TestCheckServed(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(fixture)
	require.NoError(t, err)
	require.NoError(t, openapitest.CheckServed(raw, raw))
	require.ErrorContains(t, openapitest.CheckServed(raw[1:], raw), "not the file")
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, raw))
	require.ErrorContains(t, openapitest.CheckServed(compact.Bytes(), compact.Bytes()), "pretty-printed")
	noNewline := bytes.TrimSuffix(raw, []byte("\n"))
	require.ErrorContains(t, openapitest.CheckServed(noNewline, noNewline), "pretty-printed")
}

// TestChecksFail breaks the fixture one way at a time and requires the
// check concerned to report it.
func TestChecksFail(t *testing.T) {
	t.Parallel()
	thing := func(doc map[string]any) map[string]any {
		return at(doc, "paths", "/things/{id}", "get")
	}
	schema := func(doc map[string]any) map[string]any { return at(doc, "components", "schemas", "Thing") }
	for _, tc := range []struct {
		name  string
		check func(*openapitest.Doc) error
		spoil func(doc map[string]any)
		want  string
	}{
		{"version", (*openapitest.Doc).CheckVersion, func(doc map[string]any) { doc["openapi"] = "3.0.3" }, "not 3.1.0"},
		{"ref dangles", (*openapitest.Doc).CheckRefs, func(doc map[string]any) {
			at(thing(doc), "responses", "200", "content", "application/json", "schema")["$ref"] = "#/components/schemas/Thin"
		}, `no "Thin"`},
		{"ref outside components", (*openapitest.Doc).CheckRefs, func(doc map[string]any) {
			at(thing(doc), "responses", "200", "content", "application/json", "schema")["$ref"] = "#/paths"
		}, "does not point into #/components/"},
		{"ref not a string", (*openapitest.Doc).CheckRefs, func(doc map[string]any) {
			at(thing(doc), "responses", "200", "content", "application/json", "schema")["$ref"] = 1
		}, "is not a string"},
		{"media type example", (*openapitest.Doc).CheckExamples, func(doc map[string]any) {
			at(thing(doc), "responses", "200", "content", "application/json", "examples", "small", "value")["size"] = -1
		}, "examples/small is not valid"},
		{"schema example", (*openapitest.Doc).CheckExamples, func(doc map[string]any) {
			schema(doc)["examples"] = []any{map[string]any{"size": "big"}}
		}, "Thing/examples/0 is not valid"},
		{"parameter example format", (*openapitest.Doc).CheckExamples, func(doc map[string]any) {
			at(doc, "components", "parameters", "Id")["example"] = "not-a-uuid"
		}, "Id/example is not valid"},
		{"named example without a value", (*openapitest.Doc).CheckExamples, func(doc map[string]any) {
			at(thing(doc), "responses", "200", "content", "application/json", "examples")["small"] = map[string]any{}
		}, "not an example object with a value"},
		{"unused component", (*openapitest.Doc).CheckComponents, func(doc map[string]any) {
			at(doc, "components", "schemas")["Spare"] = map[string]any{"type": "string"}
		}, "schemas/Spare is not used"},
		{"unused security scheme", (*openapitest.Doc).CheckComponents, func(doc map[string]any) {
			at(doc, "components", "securitySchemes")["basic"] = map[string]any{"type": "http", "scheme": "basic"}
		}, "securitySchemes/basic is not used"},
		{"nullable", (*openapitest.Doc).CheckComponents, func(doc map[string]any) {
			at(schema(doc), "properties", "size")["nullable"] = true
		}, "nullable"},
		{"no server", (*openapitest.Doc).CheckOperations, func(doc map[string]any) { delete(doc, "servers") }, "no server"},
		{"no operationId", (*openapitest.Doc).CheckOperations, func(doc map[string]any) { delete(thing(doc), "operationId") }, "no operationId"},
		{"shared operationId", (*openapitest.Doc).CheckOperations, func(doc map[string]any) { thing(doc)["operationId"] = "health" }, "share operationId health"},
		{"no summary", (*openapitest.Doc).CheckOperations, func(doc map[string]any) { delete(thing(doc), "summary") }, "no summary"},
		{"no description", (*openapitest.Doc).CheckOperations, func(doc map[string]any) { delete(thing(doc), "description") }, "no description"},
		{"no tag", (*openapitest.Doc).CheckOperations, func(doc map[string]any) { delete(thing(doc), "tags") }, "has no tag"},
		{"undefined tag", (*openapitest.Doc).CheckOperations, func(doc map[string]any) { thing(doc)["tags"] = []any{"other"} }, "tag other is not defined"},
		{"unused tag", (*openapitest.Doc).CheckOperations, func(doc map[string]any) {
			doc["tags"] = append(doc["tags"].([]any), map[string]any{"name": "spare", "description": "Spare."})
		}, `tag "spare" is not used`},
		{"tag without description", (*openapitest.Doc).CheckOperations, func(doc map[string]any) {
			delete(doc["tags"].([]any)[0].(map[string]any), "description")
		}, "has no description"},
		{"no 401", (*openapitest.Doc).CheckOperations, func(doc map[string]any) { delete(at(thing(doc), "responses"), "401") }, "documents no 401"},
		{"own security, no 401", (*openapitest.Doc).CheckOperations, func(doc map[string]any) {
			delete(doc, "security")
			thing(doc)["security"] = []any{map[string]any{"bearer": []any{}}}
			delete(at(thing(doc), "responses"), "401")
		}, "documents no 401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(fixture)
			require.NoError(t, err)
			var doc map[string]any
			require.NoError(t, json.Unmarshal(raw, &doc))
			d := parse(t, doc)
			require.NoError(t, tc.check(d), "the fixture passes")
			tc.spoil(doc)
			require.ErrorContains(t, tc.check(parse(t, doc)), tc.want)
		})
	}
}

// TestDocLookups covers the helpers a service's route checks use.
func TestDocLookups(t *testing.T) {
	t.Parallel()
	d := openapitest.Load(t, fixture)
	ops := d.Operations()
	require.Len(t, ops, 2)
	op := ops["GET /things/{id}"]
	require.NotNil(t, op)
	p := d.Resolve(t, openapitest.List(op["parameters"])[0])
	require.Equal(t, "id", p["name"])
	require.Equal(t, p, d.Resolve(t, p), "an object that is no $ref is itself")
	pointer := openapitest.PointerTo("paths", "/things/{id}", "get", "responses", "200", "content", "application/json", "schema")
	require.Equal(t, "/paths/~1things~1{id}/get/responses/200/content/application~1json/schema", pointer)
	d.Validate(t, pointer, []byte(`{"size":3}`))
	require.Error(t, d.Schema(t, "#"+pointer).Validate(map[string]any{"size": "x"}))
}

// parse encodes doc and parses it.
func parse(t *testing.T, doc map[string]any) *openapitest.Doc {
	t.Helper()
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	d, err := openapitest.Parse(raw)
	require.NoError(t, err)
	return d
}

// at returns the object at the member path of m.
func at(m map[string]any, path ...string) map[string]any {
	for _, k := range path {
		m = m[k].(map[string]any)
	}
	return m
}
