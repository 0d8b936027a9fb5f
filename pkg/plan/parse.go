package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"

	"github.com/weftrun/weft/internal/strictjson"
)

// Parse reads a plan from a JSON or YAML document, applies defaults
// (ApplyDefaults) and validates it (Validate). It returns the plan, or nil
// and a *ValidationError saying what is wrong.
//
// A document whose first non-whitespace byte is '{' is JSON; anything else
// is YAML, converted to JSON by sigs.k8s.io/yaml so that both take one
// decoding path. (A YAML document in flow style, starting with '{', is
// therefore read as JSON.) Decoding is strict. Parse rejects:
//
//   - a document longer than limits.MaxPlanBytes, before parsing it;
//   - invalid UTF-8, and \u escapes that encode half a surrogate pair
//     (encoding/json would turn either into U+FFFD silently);
//   - YAML that is not exactly one document, or has a mapping key that is
//     not a string (YAML would turn `on:` into "true" and let 1 and "1"
//     collide);
//   - a schemaVersion newer than SchemaVersion, reported alone rather than
//     with the unknown fields a newer schema may bring;
//   - a syntax error, a top level that is not an object, trailing data,
//     nesting deeper than limits.MaxDepth;
//   - unknown fields, including field names in the wrong case ("ID",
//     "Steps"), duplicate keys anywhere (inputs included), values of the
//     wrong type, null as an array element.
//
// JSON null for an object member means the member is absent. A problem
// found while decoding names its step by id when the document is
// well-formed enough to read one, and otherwise by path ("steps[2].retry").
// Parse never panics.
func Parse(data []byte, limits Limits) (*Plan, error) {
	l := limits.withDefaults()
	if len(data) > l.MaxPlanBytes {
		return nil, single("", CodePlanTooLarge, "the document is %d bytes, more than the limit of %d", len(data), l.MaxPlanBytes)
	}
	if err := strictjson.CheckUTF8(data); err != nil {
		return nil, fromStrict(err).err()
	}
	doc := data
	if !isJSON(data) {
		var err error
		if doc, err = yamlToJSON(data, l.MaxDepth); err != nil {
			return nil, err
		}
	}
	p, err := decodeStrict(doc, l.MaxDepth)
	if err != nil {
		return nil, err
	}
	p.ApplyDefaults()
	if err := p.Validate(l); err != nil {
		return nil, err
	}
	return p, nil
}

// attributeSteps rewrites problems found at "steps[N]…" to name step N by
// its id, when the document is well-formed enough to read a valid id for
// it: Field "steps[2].retry.tries" becomes StepID "c", Field
// "retry.tries".
func attributeSteps(doc []byte, ps problems) {
	var top map[string]json.RawMessage // map keys match exactly
	var steps []map[string]json.RawMessage
	if json.Unmarshal(doc, &top) != nil || json.Unmarshal(top["steps"], &steps) != nil {
		return
	}
	// A step object with a duplicate key may have two ids: leave it alone.
	ambiguous := map[int]bool{}
	for _, p := range ps {
		if n, rest, ok := stepIndex(p.Field); ok && rest == "" && p.Code == CodeDuplicateKey {
			ambiguous[n] = true
		}
	}
	for i := range ps {
		n, rest, ok := stepIndex(ps[i].Field)
		if !ok || n >= len(steps) || ambiguous[n] {
			continue
		}
		var id string
		if json.Unmarshal(steps[n]["id"], &id) != nil || idProblem(id, len(id)) != "" {
			continue
		}
		ps[i].StepID, ps[i].Field = id, strings.TrimPrefix(rest, ".")
	}
}

// stepIndex splits a path "steps[N]rest" into N and rest.
func stepIndex(path string) (n int, rest string, ok bool) {
	rest, ok = strings.CutPrefix(path, "steps[")
	if !ok {
		return 0, "", false
	}
	num, rest, ok := strings.Cut(rest, "]")
	n, err := strconv.Atoi(num)
	return n, rest, ok && err == nil && n >= 0
}

// isJSON reports whether data's first non-whitespace byte is '{'.
func isJSON(data []byte) bool {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '{'
}

// yamlToJSON converts a YAML document to JSON. It rejects YAML that is not
// exactly one document, duplicate keys, and mapping keys that are not
// strings, which JSON conversion would otherwise stringify.
func yamlToJSON(data []byte, maxDepth int) ([]byte, error) {
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	dec.SetStrict(true)
	var doc any
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, single("", CodeMalformed, "the document is empty")
		}
		return nil, single("", CodeMalformed, "invalid YAML: %v", err)
	}
	// Decode must not be called again after an error: go.yaml.in/yaml/v2
	// panics then.
	if err := dec.Decode(new(any)); !errors.Is(err, io.EOF) {
		return nil, single("", CodeMalformed, "more than one YAML document; a plan is exactly one")
	}
	if err := yamlKeys(doc, "", 1, maxDepth); err != nil {
		return nil, err
	}
	out, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, single("", CodeMalformed, "invalid YAML: %v", err)
	}
	return out, nil
}

// yamlKeys checks that every mapping key in a decoded YAML value is a
// string, and that nesting stays within maxDepth.
func yamlKeys(v any, path string, depth, maxDepth int) error {
	switch t := v.(type) {
	case map[any]any:
		if depth > maxDepth {
			return single(path, CodeTooDeep, "nested deeper than the limit of %d", maxDepth)
		}
		for _, k := range slices.SortedFunc(maps.Keys(t), byString) {
			key, ok := k.(string)
			if !ok {
				return single(path, CodeMalformed, "mapping key %s is %T, not a string; quote it", keyName(fmt.Sprint(k)), k)
			}
			if err := yamlKeys(t[k], childPath(path, key), depth+1, maxDepth); err != nil {
				return err
			}
		}
	case []any:
		if depth > maxDepth {
			return single(path, CodeTooDeep, "nested deeper than the limit of %d", maxDepth)
		}
		for i, e := range t {
			if err := yamlKeys(e, indexPath(path, i), depth+1, maxDepth); err != nil {
				return err
			}
		}
	}
	return nil
}

// byString orders YAML mapping keys by their printed form, so that the
// first bad key reported is always the same one.
func byString(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) }
