package doccheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// CheckKeysFromSource holds the JSON example to a struct type a test
// cannot import (one of a main package, say): every top-level key of the
// example must be the json name of a field of the struct typeName that
// the Go file at path declares. It checks the names only, not the values'
// types nor nested objects, so a type a test can import is held with
// Check instead.
func CheckKeysFromSource(example []byte, path, typeName string) error {
	names, err := jsonNames(path, typeName)
	if err != nil {
		return err
	}
	var doc map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(example))
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	var unknown []string
	for k := range doc {
		if k != Elision && !slices.Contains(names, k) {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("keys %s name no field of %s (%s has %s)", strings.Join(unknown, ", "), typeName, path, strings.Join(names, ", "))
	}
	return nil
}

// jsonNames returns the json names of the fields of the struct typeName
// declared in the Go file at path.
func jsonNames(path, typeName string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("doccheck: %w", err)
	}
	st := structType(f, typeName)
	if st == nil {
		return nil, fmt.Errorf("doccheck: %s declares no struct type %s", path, typeName)
	}
	var names []string
	for _, field := range st.Fields.List {
		tag := ""
		if field.Tag != nil {
			tag, _ = strconv.Unquote(field.Tag.Value)
		}
		name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
		switch {
		case name == "-":
		case name != "":
			names = append(names, name)
		default:
			for _, id := range field.Names {
				names = append(names, id.Name)
			}
		}
	}
	return names, nil
}

// structType returns the struct type typeName that f declares, or nil.
func structType(f *ast.File, typeName string) *ast.StructType {
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, s := range gd.Specs {
			if ts := s.(*ast.TypeSpec); ts.Name.Name == typeName {
				st, _ := ts.Type.(*ast.StructType)
				return st
			}
		}
	}
	return nil
}
