package openapitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// CheckServed reports whether served is onDisk, byte for byte, and onDisk
// is JSON pretty-printed with a 2-space indent and a final newline.
func CheckServed(served, onDisk []byte) error {
	if !bytes.Equal(served, onDisk) {
		return errors.New("the document served is not the file")
	}
	var compact, indented bytes.Buffer
	if err := json.Compact(&compact, onDisk); err != nil {
		return fmt.Errorf("the file is not JSON: %w", err)
	}
	if err := json.Indent(&indented, compact.Bytes(), "", "  "); err != nil {
		return fmt.Errorf("the file is not JSON: %w", err)
	}
	indented.WriteByte('\n')
	if !bytes.Equal(indented.Bytes(), onDisk) {
		return errors.New("the file is not pretty-printed with a 2-space indent and a final newline")
	}
	return nil
}

// CheckVersion reports whether the document is OpenAPI 3.1.0.
func (d *Doc) CheckVersion() error {
	if d.Tree["openapi"] != "3.1.0" {
		return fmt.Errorf("openapi is %v, not 3.1.0", d.Tree["openapi"])
	}
	return nil
}

// CheckRefs reports every $ref of the document that is not a string, does
// not point into #/components/, or does not resolve.
func (d *Doc) CheckRefs() error {
	var errs []error
	walk(d.Tree, func(m map[string]any) {
		ref, ok := m["$ref"]
		if !ok {
			return
		}
		s, isString := ref.(string)
		switch {
		case !isString:
			errs = append(errs, fmt.Errorf("$ref %v is not a string", ref))
		case !strings.HasPrefix(s, "#/components/"):
			errs = append(errs, fmt.Errorf("$ref %q does not point into #/components/", s))
		default:
			if _, err := lookup(d.Tree, s); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}

// CheckComponents reports every component the paths do not reach through
// $refs (a security scheme: that no security requirement names), and
// every object that uses the OpenAPI 3.0 keyword nullable.
func (d *Doc) CheckComponents() error {
	var errs []error
	walk(d.Tree, func(m map[string]any) {
		if _, ok := m["nullable"]; ok {
			errs = append(errs, errors.New("nullable is used: OpenAPI 3.1 writes a nullable type as a type array"))
		}
	})
	used := map[string]bool{}
	var reach func(v any)
	reach = func(v any) {
		walk(v, func(m map[string]any) {
			ref, ok := m["$ref"].(string)
			if !ok || used[ref] {
				return
			}
			used[ref] = true
			if at, err := lookup(d.Tree, ref); err == nil {
				reach(at)
			}
		})
	}
	reach(d.Tree["paths"])
	requirements := List(d.Tree["security"])
	for _, op := range d.Operations() {
		requirements = append(requirements, List(op["security"])...)
	}
	for _, req := range requirements {
		req, _ := req.(map[string]any)
		for name := range req {
			used["#/components/securitySchemes/"+name] = true
		}
	}
	components, _ := d.Tree["components"].(map[string]any)
	for _, kind := range slices.Sorted(maps.Keys(components)) {
		members, _ := components[kind].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(members)) {
			if !used["#/components/"+kind+"/"+name] {
				errs = append(errs, fmt.Errorf("component %s/%s is not used", kind, name))
			}
		}
	}
	return errors.Join(errs...)
}

// CheckOperations reports a document without a server, every operation
// without a unique operationId, a summary, a description or defined tags,
// or that needs a key and documents no 401; and every tag defined without
// a description or not used.
func (d *Doc) CheckOperations() error {
	var errs []error
	if len(List(d.Tree["servers"])) == 0 {
		errs = append(errs, errors.New("the document names no server"))
	}
	defined := map[string]bool{}
	for _, tag := range List(d.Tree["tags"]) {
		tag, _ := tag.(map[string]any)
		name, _ := tag["name"].(string)
		if desc, _ := tag["description"].(string); desc == "" {
			errs = append(errs, fmt.Errorf("tag %q has no description", name))
		}
		defined[name] = true
	}
	ids, tagged := map[string]string{}, map[string]bool{}
	ops := d.Operations()
	for _, route := range slices.Sorted(maps.Keys(ops)) {
		op := ops[route]
		errs = append(errs, d.checkOperation(route, op, defined, ids)...)
		for _, tag := range List(op["tags"]) {
			s, _ := tag.(string)
			tagged[s] = true
		}
	}
	for _, tag := range slices.Sorted(maps.Keys(defined)) {
		if !tagged[tag] {
			errs = append(errs, fmt.Errorf("tag %q is not used", tag))
		}
	}
	return errors.Join(errs...)
}

// checkOperation returns the problems of the operation op of route, ids
// holding the routes of the operationIds seen so far.
func (d *Doc) checkOperation(route string, op map[string]any, defined map[string]bool, ids map[string]string) []error {
	var errs []error
	id, _ := op["operationId"].(string)
	switch {
	case id == "":
		errs = append(errs, fmt.Errorf("%s has no operationId", route))
	case ids[id] != "":
		errs = append(errs, fmt.Errorf("%s and %s share operationId %s", ids[id], route, id))
	default:
		ids[id] = route
	}
	for _, field := range []string{"summary", "description"} {
		if s, _ := op[field].(string); s == "" {
			errs = append(errs, fmt.Errorf("%s has no %s", route, field))
		}
	}
	if len(List(op["tags"])) == 0 {
		errs = append(errs, fmt.Errorf("%s has no tag", route))
	}
	for _, tag := range List(op["tags"]) {
		if s, _ := tag.(string); !defined[s] {
			errs = append(errs, fmt.Errorf("%s: tag %v is not defined", route, tag))
		}
	}
	security, own := op["security"]
	if !own {
		security = d.Tree["security"]
	}
	responses, _ := op["responses"].(map[string]any)
	if _, has401 := responses["401"]; len(List(security)) > 0 && !has401 {
		errs = append(errs, fmt.Errorf("%s needs a key but documents no 401", route))
	}
	return errs
}

// walk calls f on every object of v, v included, depth first in key
// order.
func walk(v any, f func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		f(v)
		for _, k := range slices.Sorted(maps.Keys(v)) {
			walk(v[k], f)
		}
	case []any:
		for _, e := range v {
			walk(e, f)
		}
	}
}
