package plan

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/weftrun/weft/pkg/plan/expr"
	"github.com/weftrun/weft/pkg/strictjson"
)

// A plan's input schema (Plan.InputSchema, docs/plans.md "Input schema")
// is JSON Schema 2020-12 limited to a documented subset of keywords, with
// no reference outside the schema itself: what the subset holds is what
// is documented, and compiling a schema reads nothing but the plan.

// draft2020 is the only $schema a plan's input schema may name.
const draft2020 = "https://json-schema.org/draft/2020-12/schema"

// inputSchemaURL is the location the input schema is compiled at. It
// names no resource: a reference to anything but "#…" is refused.
const inputSchemaURL = "urn:weft:plan:inputSchema"

// subschemaKeywords are the keywords of the subset whose value is a
// schema (items, additionalProperties) or an object of schemas
// (properties, $defs).
var subschemaKeywords = map[string]bool{"items": false, "additionalProperties": false, "properties": true, "$defs": true}

// valueKeywords are the other keywords of the subset: assertions and
// annotations whose values are not schemas.
var valueKeywords = map[string]bool{
	"type": true, "required": true, "enum": true, "const": true, "minimum": true, "maximum": true,
	"minLength": true, "maxLength": true, "pattern": true, "$ref": true, "$schema": true,
	"title": true, "description": true, "default": true, "examples": true, "$comment": true,
}

// InputSchemaKeywords lists the keywords a plan's input schema may use,
// sorted.
func InputSchemaKeywords() []string {
	var out []string
	for k := range subschemaKeywords {
		out = append(out, k)
	}
	for k := range valueKeywords {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// SchemaVersionInputSchema is the first plan schema version that holds an
// input schema. An older reader would run the plan's expressions over an
// untyped input, where the schema's types decided what they mean (a whole
// number read as a double for "number"), so such a plan is refused there
// rather than misread.
const SchemaVersionInputSchema = 3

// inputSchema compiles p's InputSchema, checked against the subset and
// l.MaxInputSchemaBytes, and adds its problems (CodeInputSchemaTooLarge,
// CodeInvalidInputSchema) to ps. It returns nil when p has none or it is
// refused.
func (p *Plan) inputSchema(ps *problems, l Limits) *jsonschema.Schema {
	doc := compactInput(p.InputSchema)
	if len(doc) == 0 {
		return nil
	}
	if p.SchemaVersion != 0 && p.SchemaVersion < SchemaVersionInputSchema {
		ps.add("", "inputSchema", CodeFieldNotAllowed, "an input schema needs schemaVersion %d", SchemaVersionInputSchema)
		return nil
	}
	if n := len(doc); n > l.MaxInputSchemaBytes {
		ps.add("", "inputSchema", CodeInputSchemaTooLarge, "%d bytes of JSON, more than the limit of %d", n, l.MaxInputSchemaBytes)
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		ps.add("", "inputSchema", CodeInvalidInputSchema, "not valid JSON")
		return nil
	}
	before := len(*ps)
	checkSubset(ps, "inputSchema", v)
	if len(*ps) > before {
		return nil
	}
	sch, err := compileInputSchema(v)
	if err != nil {
		addCompileProblems(ps, err)
		return nil
	}
	return sch
}

// checkSubset adds a problem for each keyword of the schema v, at path,
// and of its subschemas, that is outside the subset, for a $schema other
// than Draft 2020-12 and for a $ref outside the document.
func checkSubset(ps *problems, path string, v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); !isBool {
			ps.add("", path, CodeInvalidInputSchema, "a schema must be an object or a boolean")
		}
		return
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		at := strictjson.MemberPath(path, k, nil)
		many, sub := subschemaKeywords[k]
		switch {
		case sub && many:
			checkSchemas(ps, at, obj[k])
		case sub:
			checkSubset(ps, at, obj[k])
		case !valueKeywords[k]:
			ps.add("", at, CodeInvalidInputSchema, "keyword %s is outside the supported subset (%s)",
				quote(k), strings.Join(InputSchemaKeywords(), ", "))
		case k == "$ref":
			if s, ok := obj[k].(string); ok && !strings.HasPrefix(s, "#") {
				ps.add("", at, CodeInvalidInputSchema, "%s is outside the schema: a reference must start with \"#\"", quote(s))
			}
		case k == "$schema":
			if s, ok := obj[k].(string); !ok || strings.TrimSuffix(s, "#") != draft2020 {
				ps.add("", at, CodeInvalidInputSchema, "must be %q (JSON Schema 2020-12) or absent", draft2020)
			}
		}
	}
}

// checkSchemas checks each member of v, an object of schemas.
func checkSchemas(ps *problems, path string, v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		return // the meta-schema refuses it when compiling
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		checkSubset(ps, strictjson.MemberPath(path, k, nil), obj[k])
	}
}

// compileInputSchema compiles v, a schema in the subset, as Draft 2020-12
// with a loader that loads nothing.
func compileInputSchema(v any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(inputSchemaURL, v); err != nil {
		return nil, err
	}
	return c.Compile(inputSchemaURL)
}

// noLoader refuses every resource: an input schema refers to nothing but
// itself.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s is outside the schema, and an input schema loads nothing", url)
}

// addCompileProblems adds err, the compiler's refusal of an input schema,
// as problems: one per place the meta-schema refuses, else one for the
// whole schema.
func addCompileProblems(ps *problems, err error) {
	var se *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &se) && errors.As(se.Err, &ve) {
		for _, ip := range flatten(ve) {
			path := "inputSchema"
			for _, tok := range pointerTokens(ip.Pointer) {
				path = strictjson.MemberPath(path, tok, nil)
			}
			ps.add("", path, CodeInvalidInputSchema, "%s: %s", ip.Keyword, ip.Message)
		}
		return
	}
	msg := strings.ReplaceAll(strings.ReplaceAll(err.Error(), inputSchemaURL, ""), "\n", "; ")
	ps.add("", "inputSchema", CodeInvalidInputSchema, "%s", msg)
}

// InputProblem is one way an input breaks its plan's input schema.
type InputProblem struct {
	// Pointer is the JSON pointer (RFC 6901) of the offending value in
	// the input: "" for the input itself, "/total", "/lines/0/sku". For
	// a missing required property it is the property's would-be place.
	Pointer string
	// Keyword is the schema keyword the value breaks: type, required,
	// minimum, additionalProperties, …, or false for a false schema.
	Keyword string
	// Message says what is wrong, for people.
	Message string
}

// HasInputSchema reports whether v's plan declares an input schema.
func (v Validated) HasInputSchema() bool { return v.schema != nil }

// CheckInputSchema checks input, a run's input (empty means JSON null),
// against v's input schema, and returns every problem, ordered by
// pointer, then keyword, then message; nil when it fits, when v's plan
// declares no schema, and for the zero Validated. An input that is not
// JSON is one problem at "" with keyword "json". The schema was compiled
// when v was made. Safe for concurrent use.
func (v Validated) CheckInputSchema(input []byte) []InputProblem {
	if v.schema == nil {
		return nil
	}
	var doc any
	if len(bytes.TrimSpace(input)) > 0 {
		var err error
		if doc, err = jsonschema.UnmarshalJSON(bytes.NewReader(input)); err != nil {
			return []InputProblem{{Keyword: "json", Message: "not a JSON document"}}
		}
	}
	err := v.schema.Validate(doc)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	return flatten(ve)
}

// flatten returns the leaves of ve's tree, one per required or additional
// property, sorted. Of the alternatives of an anyOf or oneOf (which only
// the meta-schema holds) only the first is told.
func flatten(ve *jsonschema.ValidationError) []InputProblem {
	var out []InputProblem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		causes := e.Causes
		switch e.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			causes = causes[:min(len(causes), 1)]
		}
		if len(causes) > 0 {
			for _, c := range causes {
				walk(c)
			}
			return
		}
		out = append(out, leafProblems(e)...)
	}
	walk(ve)
	slices.SortFunc(out, func(a, b InputProblem) int {
		return cmp.Or(strings.Compare(a.Pointer, b.Pointer), strings.Compare(a.Keyword, b.Keyword), strings.Compare(a.Message, b.Message))
	})
	return slices.Compact(out)
}

// leafProblems returns the problems of e, a leaf of the validator's tree.
func leafProblems(e *jsonschema.ValidationError) []InputProblem {
	at := pointer(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		out := make([]InputProblem, len(k.Missing))
		for i, name := range k.Missing {
			out[i] = InputProblem{Pointer: at + "/" + escapeToken(name), Keyword: "required", Message: "required property is missing"}
		}
		return out
	case *kind.AdditionalProperties:
		out := make([]InputProblem, len(k.Properties))
		for i, name := range k.Properties {
			out[i] = InputProblem{Pointer: at + "/" + escapeToken(name), Keyword: "additionalProperties", Message: "property is not allowed"}
		}
		return out
	case *kind.FalseSchema:
		return []InputProblem{{Pointer: at, Keyword: "false", Message: "no value is allowed here"}}
	}
	keyword := "schema"
	if kp := e.ErrorKind.KeywordPath(); len(kp) > 0 {
		keyword = kp[len(kp)-1]
	}
	return []InputProblem{{Pointer: at, Keyword: keyword, Message: strings.TrimPrefix(leafMessage(e), keyword+": ")}}
}

// leafMessage is the validator's message of the leaf e, without the
// location it leads with.
func leafMessage(e *jsonschema.ValidationError) string {
	bare := jsonschema.ValidationError{SchemaURL: e.SchemaURL, ErrorKind: e.ErrorKind}
	return strings.TrimPrefix(bare.Error(), "at '': ")
}

// pointer renders tokens as a JSON pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapeToken(t))
	}
	return b.String()
}

// escapeToken escapes a JSON pointer token ("~" as "~0", "/" as "~1").
func escapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// pointerTokens splits a JSON pointer into its unescaped tokens.
func pointerTokens(p string) []string {
	if p == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, t := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return parts
}

// inputTypes returns the types p's InputSchema declares for the input's
// properties, by name (expr.Scope.InputTypes): each property of the
// schema's top level whose name is a CEL identifier and whose schema has
// a type that is one JSON Schema type name. Nil for a plan without a
// schema or without such properties.
func (p *Plan) inputTypes() map[string]string {
	if len(p.InputSchema) == 0 {
		return nil
	}
	var root struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(p.InputSchema, &root) != nil {
		return nil
	}
	var out map[string]string
	for name, raw := range root.Properties {
		var prop struct {
			Type json.RawMessage `json:"type"`
		}
		var t string
		if !celIdentifier(name) || json.Unmarshal(raw, &prop) != nil || json.Unmarshal(prop.Type, &t) != nil || !expr.IsInputType(t) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = t
	}
	return out
}

// celIdentifier reports whether s is a letter or underscore followed by
// ASCII letters, digits and underscores: a name input.<s> selects.
func celIdentifier(s string) bool {
	for i, r := range s {
		switch {
		case r == '_', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case i > 0 && '0' <= r && r <= '9':
		default:
			return false
		}
	}
	return s != ""
}
