package plan

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/weftrun/weft/pkg/strictjson"
)

// This file adapts internal/strictjson, which checks every document before
// it is decoded into a Plan, to plan's problems: it maps the codes,
// redacts keys that look like credentials, and reports a schemaVersion
// newer than SchemaVersion alone, rather than with the unknown fields a
// newer schema may bring.

// decodeStrict checks doc, a JSON document, strictly against the Plan type
// and decodes it. It returns a *ValidationError when doc is rejected.
func decodeStrict(doc []byte, maxDepth int) (*Plan, error) {
	var version json.Number // the top-level schemaVersion, when a number
	opts := strictjson.Options{
		MaxDepth: maxDepth,
		Document: "plan",
		Redact:   secretShaped,
		Visit: func(path string, tok json.Token) {
			if path == "schemaVersion" {
				version, _ = tok.(json.Number)
			}
		},
	}
	var p Plan
	err := strictjson.Decode(doc, &p, opts)
	if v, verr := strconv.Atoi(string(version)); verr == nil && v > SchemaVersion {
		return nil, single("schemaVersion", CodeUnsupportedSchemaVersion,
			"version %d is newer than this code reads (%d); upgrade Weft", v, SchemaVersion)
	}
	if err != nil {
		ps := fromStrict(err)
		attributeSteps(doc, ps)
		return nil, ps.err()
	}
	return &p, nil
}

// fromStrict turns an error from strictjson into plan-level problems.
func fromStrict(err error) problems {
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return problems{{Code: CodeMalformed, Message: err.Error()}}
	}
	ps := make(problems, 0, len(se.Problems))
	for _, p := range se.Problems {
		ps = append(ps, Problem{Field: p.Path, Code: planCode(p.Code), Message: p.Message})
	}
	return ps
}

// planCode maps a strictjson problem code onto plan's.
func planCode(code string) string {
	switch code {
	case strictjson.CodeTooDeep:
		return CodeTooDeep
	case strictjson.CodeDuplicateKey:
		return CodeDuplicateKey
	case strictjson.CodeUnknownField:
		return CodeUnknownField
	default: // malformed, invalid UTF-8, wrong type
		return CodeMalformed
	}
}

// secretShaped reports whether an object key itself looks like a
// credential, so that messages and paths must not repeat it.
func secretShaped(key string) bool {
	_, ok := SecretShape(key)
	return ok
}

// keyName renders an object key for a message, redacting one that itself
// looks like a credential.
func keyName(key string) string { return strictjson.KeyName(key, secretShaped) }
