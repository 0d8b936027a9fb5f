package openapitest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Example is one example of a document and the schema it is of.
type Example struct {
	// At and Schema are the JSON pointers of the example and its schema.
	At, Schema string
	// Value is the example, numbers as json.Number.
	Value any
}

// Examples returns every example of the document: a media type's or a
// parameter's example and examples (of its schema), and a schema's
// examples, in document order by key. A named example that is not an
// object with a value, or whose $ref does not resolve, is an error.
func (d *Doc) Examples() ([]Example, error) {
	var found []Example
	var errs []error
	var visit func(v any, path []string)
	visit = func(v any, path []string) {
		switch v := v.(type) {
		case map[string]any:
			ex, err := d.examplesOf(v, path)
			found, errs = append(found, ex...), append(errs, err...)
			for _, k := range slices.Sorted(maps.Keys(v)) {
				visit(v[k], append(slices.Clip(path), k))
			}
		case []any:
			for i, e := range v {
				visit(e, append(slices.Clip(path), fmt.Sprint(i)))
			}
		}
	}
	visit(d.instance, nil)
	return found, errors.Join(errs...)
}

// CheckExamples reports every example of the document (Examples) that is
// not valid against its schema.
func (d *Doc) CheckExamples() error {
	found, err := d.Examples()
	errs := []error{err}
	for _, ex := range found {
		sch, err := d.compiler.Compile(docURL + "#" + ex.Schema)
		if err != nil {
			errs = append(errs, fmt.Errorf("compiling the schema of the example at %s: %w", ex.At, err))
			continue
		}
		if err := sch.Validate(ex.Value); err != nil {
			errs = append(errs, fmt.Errorf("the example at %s is not valid against its schema: %w", ex.At, err))
		}
	}
	return errors.Join(errs...)
}

// examplesOf returns the examples that the object v at path holds itself.
func (d *Doc) examplesOf(v map[string]any, path []string) ([]Example, []error) {
	here := PointerTo(path...)
	var found []Example
	if list, ok := v["examples"].([]any); ok { // a schema's examples
		for i, e := range list {
			found = append(found, Example{At: fmt.Sprintf("%s/examples/%d", here, i), Schema: here, Value: e})
		}
	}
	if _, ok := v["schema"].(map[string]any); !ok || !mediaTypeOrParameter(v, path) {
		return found, nil
	}
	schema := here + "/schema"
	if e, ok := v["example"]; ok {
		found = append(found, Example{At: here + "/example", Schema: schema, Value: e})
	}
	var errs []error
	named, _ := v["examples"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(named)) {
		at := here + "/examples/" + PointerTo(name)[1:]
		ex, ok := named[name].(map[string]any)
		if ref, isRef := ex["$ref"].(string); ok && isRef {
			resolved, err := lookup(d.instance, ref)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", at, err))
				continue
			}
			ex, ok = resolved.(map[string]any)
		}
		value, hasValue := ex["value"]
		if !ok || !hasValue {
			errs = append(errs, fmt.Errorf("%s is not an example object with a value", at))
			continue
		}
		found = append(found, Example{At: at, Schema: schema, Value: value})
	}
	return found, errs
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
