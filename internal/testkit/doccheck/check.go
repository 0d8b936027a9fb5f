package doccheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/weftrun/weft/pkg/strictjson"
)

// Elision is the mark of a left-out value or member in an example.
const Elision = "…"

// Options tunes Check.
type Options struct {
	// Open is set for a type whose object also carries members of the
	// caller's choosing (a run's input with the keys a fire sets): keys at
	// its top level that name no field are left out of the check.
	Open bool
}

// Check holds the JSON example to the type v points to, as the real
// encoder reads and writes it. The example must be valid JSON; read with
// its elisions (package doc) resolved, it must decode strictly into v (the
// exact json names of v's fields, no unknown fields, values of the
// fields' types); and every member it shows with a value other than null
// must be in v's encoding again, so it shows no member the encoder leaves
// out. It returns an error naming every problem, or nil.
func Check(example []byte, v any, opts Options) error {
	if err := strictjson.Valid(example, strictjson.Options{Document: "the example"}); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(example))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	doc = resolve(doc)
	if err := decodeStrict(doc, v, opts); err != nil {
		return err
	}
	out, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("the encoder refuses it: %w", err)
	}
	var encoded any
	if err := json.Unmarshal(out, &encoded); err != nil {
		return fmt.Errorf("the encoder's output is not JSON: %w", err)
	}
	if missing := uncovered(doc, encoded, ""); len(missing) > 0 {
		return fmt.Errorf("members the encoder does not write: %s (it writes %s)", strings.Join(missing, ", "), out)
	}
	return nil
}

// decodeStrict decodes doc strictly into v, first leaving out, for an
// Open type, the top-level members v has no field for.
func decodeStrict(doc, v any, opts Options) error {
	for {
		data, err := json.Marshal(doc)
		if err != nil {
			return fmt.Errorf("doccheck: %w", err)
		}
		err = strictjson.Decode(data, v, strictjson.Options{Document: "the example"})
		serr, ok := errors.AsType[*strictjson.Error](err)
		if !ok {
			return err
		}
		obj, isObj := doc.(map[string]any)
		dropped := false
		for _, p := range serr.Problems {
			if _, top := obj[p.Path]; opts.Open && isObj && top && p.Code == strictjson.CodeUnknownField {
				delete(obj, p.Path)
				dropped = true
			}
		}
		if !dropped {
			return fmt.Errorf("it does not decode strictly: %w", err)
		}
	}
}

// resolve returns doc with its elisions resolved: members keyed Elision
// removed, strings holding Elision replaced by null.
func resolve(doc any) any {
	switch d := doc.(type) {
	case map[string]any:
		delete(d, Elision)
		for k, v := range d {
			d[k] = resolve(v)
		}
		return d
	case []any:
		for i, v := range d {
			d[i] = resolve(v)
		}
		return d
	case string:
		if strings.Contains(d, Elision) {
			return nil
		}
		return d
	default:
		return d
	}
}

// uncovered returns the paths of the members of doc, at any depth, whose
// value is not null and that encoded lacks.
func uncovered(doc, encoded any, path string) []string {
	var missing []string
	switch d := doc.(type) {
	case map[string]any:
		e, _ := encoded.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(d)) {
			p := strictjson.MemberPath(path, k, nil)
			ev, ok := e[k]
			switch {
			case d[k] == nil:
			case !ok:
				missing = append(missing, p)
			default:
				missing = append(missing, uncovered(d[k], ev, p)...)
			}
		}
	case []any:
		e, _ := encoded.([]any)
		for i, v := range d {
			if i < len(e) {
				missing = append(missing, uncovered(v, e[i], strictjson.IndexPath(path, i))...)
			}
		}
	}
	return missing
}
