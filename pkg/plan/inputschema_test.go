package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// orderSchema uses every keyword of the subset.
const orderSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "order", "description": "an order", "$comment": "c",
  "type": "object",
  "required": ["total", "customer"],
  "additionalProperties": false,
  "properties": {
    "total": {"type": "number", "minimum": 0, "maximum": 1000},
    "customer": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": "^[a-z]+$"},
    "currency": {"enum": ["EUR", "USD"], "default": "EUR", "examples": ["EUR"]},
    "kind": {"const": "order"},
    "lines": {"type": "array", "items": {"$ref": "#/$defs/line"}}
  },
  "$defs": {"line": {"type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}}}}
}`

// withSchema returns a valid plan whose inputSchema is schema.
func withSchema(schema string) *Plan {
	p := validPlan()
	p.InputSchema = json.RawMessage(schema)
	return p
}

// Every keyword of the documented subset compiles, and an input that
// fits passes.
func TestInputSchemaSubsetIsAccepted(t *testing.T) {
	t.Parallel()
	v, err := withSchema(orderSchema).Validated(Limits{})
	require.NoError(t, err)
	require.True(t, v.HasInputSchema())
	require.Empty(t, v.CheckInputSchema([]byte(`{"total": 12.5, "customer": "ada", "currency": "EUR", "kind": "order", "lines": [{"sku": "x"}]}`)))
	require.Contains(t, string(v.JSON()), `"inputSchema":{`)
}

// An input that breaks the schema in many places is told of each, with
// its pointer and keyword, in a stable order.
func TestCheckInputSchemaReportsEveryProblem(t *testing.T) {
	t.Parallel()
	v, err := withSchema(orderSchema).Validated(Limits{})
	require.NoError(t, err)
	input := []byte(`{"total": -1, "currency": "GBP", "kind": "x", "lines": [{"sku": 3}, {}], "extra": true}`)
	got := v.CheckInputSchema(input)
	type pk struct{ pointer, keyword string }
	var keys []pk
	for _, p := range got {
		require.NotEmpty(t, p.Message, p)
		keys = append(keys, pk{p.Pointer, p.Keyword})
	}
	require.Equal(t, []pk{
		{"/currency", "enum"},
		{"/customer", "required"},
		{"/extra", "additionalProperties"},
		{"/kind", "const"},
		{"/lines/0/sku", "type"},
		{"/lines/1/sku", "required"},
		{"/total", "minimum"},
	}, keys)
	require.Equal(t, got, v.CheckInputSchema(input), "the order is stable")
}

// The input itself may be at fault, and an absent input is JSON null.
func TestCheckInputSchemaOfTheWholeInput(t *testing.T) {
	t.Parallel()
	v, err := withSchema(`{"type": "object"}`).Validated(Limits{})
	require.NoError(t, err)
	for _, in := range []string{"", "null", "[1]", "3"} {
		got := v.CheckInputSchema([]byte(in))
		require.Len(t, got, 1, in)
		require.Equal(t, InputProblem{Pointer: "", Keyword: "type", Message: got[0].Message}, got[0], in)
	}
	require.Equal(t, "json", v.CheckInputSchema([]byte(`{`))[0].Keyword)
}

// A plan without a schema, and the zero Validated, accept any input.
func TestNoInputSchemaAcceptsAnyInput(t *testing.T) {
	t.Parallel()
	v, err := validPlan().Validated(Limits{})
	require.NoError(t, err)
	require.False(t, v.HasInputSchema())
	require.Nil(t, v.CheckInputSchema([]byte(`[1, "x"]`)))
	require.Nil(t, Validated{}.CheckInputSchema([]byte(`{`)))
	require.NotContains(t, string(v.JSON()), "inputSchema")
}

// A keyword outside the subset is refused, named with its place in the
// schema, however deep; so are other drafts and a schema that is not one.
func TestInputSchemaOutsideTheSubsetIsRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ schema, field, contains string }{
		{`{"anyOf": [{"type": "string"}]}`, "inputSchema.anyOf", `"anyOf"`},
		{`{"properties": {"a": {"format": "email"}}}`, "inputSchema.properties.a.format", `"format"`},
		{`{"items": {"exclusiveMinimum": 0}}`, "inputSchema.items.exclusiveMinimum", `"exclusiveMinimum"`},
		{`{"$defs": {"d": {"oneOf": []}}}`, `inputSchema["$defs"].d.oneOf`, `"oneOf"`},
		{`{"additionalProperties": {"not": {}}}`, "inputSchema.additionalProperties.not", `"not"`},
		{`{"$id": "https://example.com/s"}`, `inputSchema["$id"]`, `"$id"`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#"}`, `inputSchema["$schema"]`, "2020-12"},
		{`{"properties": {"a": 3}}`, "inputSchema.properties.a", "object or a boolean"},
		{`{"type": "decimal"}`, "inputSchema.type", "must be one of"},
		{`{"minimum": "zero"}`, "inputSchema.minimum", "want number"},
		{`{"pattern": "("}`, "inputSchema.pattern", "not valid regex"},
	} {
		_, err := withSchema(c.schema).Validated(Limits{})
		p := requireOnly(t, err, CodeInvalidInputSchema)
		require.Equal(t, c.field, p.Field, c.schema)
		require.Contains(t, p.Message, c.contains, c.schema)
	}
}

// A reference outside the schema is refused: the schema loads nothing,
// neither a remote document nor a file.
func TestInputSchemaRemoteRefIsRefused(t *testing.T) {
	t.Parallel()
	for _, ref := range []string{"https://example.com/schema.json", "file:///etc/passwd", "other.json#/x",
		"https://json-schema.org/draft/2020-12/schema"} {
		_, err := withSchema(`{"properties": {"a": {"$ref": "` + ref + `"}}}`).Validated(Limits{})
		p := requireOnly(t, err, CodeInvalidInputSchema)
		require.Equal(t, `inputSchema.properties.a["$ref"]`, p.Field)
		require.Contains(t, p.Message, "outside the schema")
	}
	_, err := withSchema(`{"$ref": "#/$defs/missing"}`).Validated(Limits{})
	p := requireOnly(t, err, CodeInvalidInputSchema)
	require.Equal(t, "inputSchema", p.Field)
}

// The schema's size is bounded, inclusively, in its compact form.
func TestInputSchemaSizeLimitEdge(t *testing.T) {
	t.Parallel()
	schema := func(n int) string { // n bytes compact
		s := `{"description":""}`
		return `{"description":"` + strings.Repeat("x", n-len(s)) + `"}`
	}
	lim := Limits{MaxInputSchemaBytes: 100}
	_, err := withSchema(schema(100)).Validated(lim)
	require.NoError(t, err)
	_, err = withSchema(schema(101)).Validated(lim)
	p := requireOnly(t, err, CodeInputSchemaTooLarge)
	require.Equal(t, "inputSchema", p.Field)
	require.Contains(t, p.Message, "101 bytes")
	require.Equal(t, DefaultMaxInputSchemaBytes, DefaultLimits().MaxInputSchemaBytes)
}

// A document's inputSchema parses from YAML and JSON alike, and the
// Cache hands back the schema it compiled.
func TestInputSchemaParsesAndIsCached(t *testing.T) {
	t.Parallel()
	doc := []byte(`
planId: p
planVersion: v1
inputSchema:
  type: object
  required: [total]
  properties:
    total: {type: number}
steps:
  - {id: a, activity: echo}
`)
	c := NewCache(Limits{}, 0)
	v, err := c.ParseValidated(doc)
	require.NoError(t, err)
	again, err := c.ParseValidated(doc)
	require.NoError(t, err)
	require.Same(t, v.schema, again.schema, "the compiled schema is the cached one")
	got := again.CheckInputSchema([]byte(`{"total": "12"}`))
	require.Equal(t, []InputProblem{{Pointer: "/total", Keyword: "type", Message: got[0].Message}}, got)

	_, err = Parse([]byte(`{"planId": "p", "planVersion": "v1", "inputSchema": {"a": 1, "a": 2}, "steps": [{"id": "a", "activity": "echo"}]}`), Limits{})
	requireProblem(t, err, CodeDuplicateKey, "")
}

// One Validated checks inputs, and typed plans compile, from many
// goroutines at once (run with -race).
func TestInputSchemaIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	v, err := withSchema(orderSchema).Validated(Limits{})
	require.NoError(t, err)
	done := make(chan []InputProblem)
	for i := range 8 {
		go func() {
			p := typedPlan(typesSchema, `{"x":"${{ input.total * 2.0 }}"}`, "")
			p.PlanVersion = strings.Repeat("v", i+1)
			if _, err := p.Validated(Limits{}); err != nil {
				done <- []InputProblem{{Message: err.Error()}}
				return
			}
			done <- v.CheckInputSchema([]byte(`{"total": -1, "customer": "ada"}`))
		}()
	}
	for range 8 {
		got := <-done
		require.Len(t, got, 1, "%v", got)
		require.Equal(t, "/total", got[0].Pointer)
	}
}

// A plan with an input schema is of schema version 3: given none, it gets
// 3; stated as 1 or 2, which an older reader would run untyped, it is
// refused.
func TestInputSchemaNeedsSchemaVersion3(t *testing.T) {
	t.Parallel()
	p := withSchema(`{"type": "object"}`)
	p.SchemaVersion = 0
	p.ApplyDefaults()
	require.Equal(t, SchemaVersionInputSchema, p.SchemaVersion)
	_, err := p.Validated(Limits{})
	require.NoError(t, err)
	for _, v := range []int{1, 2} {
		p := withSchema(`{"type": "object"}`)
		p.SchemaVersion = v
		got := requireOnly(t, func() error { _, err := p.Validated(Limits{}); return err }(), CodeFieldNotAllowed)
		require.Equal(t, "inputSchema", got.Field)
		require.Contains(t, got.Message, "needs schemaVersion 3")
	}
}
