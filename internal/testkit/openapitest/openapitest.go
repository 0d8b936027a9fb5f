package openapitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

// docURL names the document for the schema compiler, so that its
// "#/components/..." references resolve within it; nothing is fetched.
const docURL = "https://weft.invalid/openapi.json"

// HTTPMethods are the operation keys of an OpenAPI path item.
var HTTPMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Doc is a parsed OpenAPI document. It is not modified after Parse and is
// safe for concurrent use.
type Doc struct {
	// Tree is the document as encoding/json decodes it into an any:
	// numbers are float64.
	Tree map[string]any

	instance map[string]any // numbers as json.Number, as jsonschema takes them
	compiler *jsonschema.Compiler
}

// Parse returns the document raw, which must be a JSON object.
func Parse(raw []byte) (*Doc, error) {
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, fmt.Errorf("openapitest: the document: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("openapitest: the document: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(docURL, inst); err != nil {
		return nil, fmt.Errorf("openapitest: the document: %w", err)
	}
	return &Doc{Tree: tree, instance: inst.(map[string]any), compiler: c}, nil
}

// Load reads and parses the document at path, failing t on an error.
func Load(t testing.TB, path string) *Doc {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	d, err := Parse(raw)
	require.NoError(t, err)
	return d
}

// Check holds served, the document a service serves, to the file at path
// (CheckServed), then runs every document-level check (package doc) as a
// subtest of t, and returns the document for the service's own checks.
func Check(t *testing.T, served []byte, path string) *Doc {
	t.Helper()
	onDisk, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, CheckServed(served, onDisk))
	d, err := Parse(onDisk)
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		check func() error
	}{
		{"version", d.CheckVersion},
		{"refs", d.CheckRefs},
		{"examples", d.CheckExamples},
		{"components", d.CheckComponents},
		{"operations", d.CheckOperations},
	} {
		t.Run(c.name, func(t *testing.T) { require.NoError(t, c.check()) })
	}
	return d
}

// Schema compiles the schema at the JSON pointer of the document (with or
// without its leading "#").
func (d *Doc) Schema(t testing.TB, pointer string) *jsonschema.Schema {
	t.Helper()
	sch, err := d.compiler.Compile(docURL + "#" + strings.TrimPrefix(pointer, "#"))
	require.NoError(t, err, "compiling the schema at %s", pointer)
	return sch
}

// Validate requires the JSON value raw to be valid against the schema at
// the pointer (as Schema takes it).
func (d *Doc) Validate(t testing.TB, pointer string, raw []byte, msgAndArgs ...any) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err, msgAndArgs...)
	require.NoError(t, d.Schema(t, pointer).Validate(v), msgAndArgs...)
}

// Resolve returns v, a JSON object of the document, or, when it is a
// $ref, the object it points at.
func (d *Doc) Resolve(t testing.TB, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	require.True(t, ok, "%v is not an object", v)
	ref, isRef := m["$ref"].(string)
	if !isRef {
		return m
	}
	at, err := lookup(d.Tree, ref)
	require.NoError(t, err)
	m, ok = at.(map[string]any)
	require.True(t, ok, "$ref %q is not an object", ref)
	return m
}

// Operations returns the document's operations by "METHOD path", the
// method in upper case.
func (d *Doc) Operations() map[string]map[string]any {
	ops := map[string]map[string]any{}
	paths, _ := d.Tree["paths"].(map[string]any)
	for path, item := range paths {
		item, _ := item.(map[string]any)
		for _, m := range HTTPMethods {
			if op, ok := item[m].(map[string]any); ok {
				ops[strings.ToUpper(m)+" "+path] = op
			}
		}
	}
	return ops
}

// Object returns the member key of m, which must be a JSON object.
func Object(t testing.TB, m any, key string) map[string]any {
	t.Helper()
	parent, ok := m.(map[string]any)
	require.True(t, ok, "not an object where %q is looked up", key)
	v, ok := parent[key].(map[string]any)
	require.True(t, ok, "%q is missing or not an object", key)
	return v
}

// List returns v as a JSON array, nil when it is not one.
func List(v any) []any {
	list, _ := v.([]any)
	return list
}

// PointerTo is the JSON pointer (RFC 6901) of the member path, each token
// escaped.
func PointerTo(path ...string) string {
	var b strings.Builder
	for _, token := range path {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// lookup returns the value a local $ref ("#/...") points at in root.
func lookup(root map[string]any, ref string) (any, error) {
	pointer, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("$ref %q is not local", ref)
	}
	var at any = root
	for _, token := range strings.Split(pointer, "/") {
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		m, isObject := at.(map[string]any)
		if !isObject {
			return nil, fmt.Errorf("$ref %q: %q is not inside an object", ref, token)
		}
		if at, ok = m[token]; !ok {
			return nil, fmt.Errorf("$ref %q does not resolve: no %q", ref, token)
		}
	}
	return at, nil
}
