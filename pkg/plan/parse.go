package plan

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/weftrun/weft/pkg/strictjson"
)

// Parse reads a plan from a JSON or YAML document, applies defaults
// (ApplyDefaults) and validates it (Validate). It returns the plan, or nil
// and a *ValidationError saying what is wrong.
//
// A document whose first non-whitespace byte is '{' is JSON; anything else
// is YAML 1.2, converted to JSON (yamlToJSON) so that both take one
// decoding path. (A YAML document in flow style, starting with '{', is
// therefore read as JSON.) Decoding is strict. Parse rejects:
//
//   - a document longer than limits.MaxPlanBytes, before parsing it;
//   - invalid UTF-8, and \u escapes that encode half a surrogate pair
//     (encoding/json would turn either into U+FFFD silently);
//   - YAML that is not exactly one document, or has a mapping key that is
//     not a string (1 and "1" would collide);
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
	p, _, err := parse(data, limits)
	return p, err
}

// ParseValidated is Parse for a caller that wants the plan as a Validated:
// the plan, its defaults filled in, found valid against limits, in its
// JSON encoding. It validates once, as Parse does.
func ParseValidated(data []byte, limits Limits) (Validated, error) {
	_, v, err := parse(data, limits)
	return v, err
}

// parse is Parse, returning the plan both as it parsed and as a Validated.
func parse(data []byte, limits Limits) (*Plan, Validated, error) {
	l := limits.withDefaults()
	if len(data) > l.MaxPlanBytes {
		return nil, Validated{}, single("", CodePlanTooLarge, "the document is %d bytes, more than the limit of %d", len(data), l.MaxPlanBytes)
	}
	if err := strictjson.CheckUTF8(data); err != nil {
		return nil, Validated{}, fromStrict(err).err()
	}
	doc := data
	if !isJSON(data) {
		var err error
		if doc, err = yamlToJSON(data, l.MaxDepth, l.MaxPlanBytes); err != nil {
			return nil, Validated{}, err
		}
	}
	p, err := decodeStrict(doc, l.MaxDepth)
	if err != nil {
		return nil, Validated{}, err
	}
	v, err := p.Validated(l)
	if err != nil {
		return nil, Validated{}, err
	}
	return p, v, nil
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
