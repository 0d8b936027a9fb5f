package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// This file holds the strict scan that every document passes before it is
// decoded into a Plan. encoding/json alone is lenient in ways a persisted,
// security-relevant format cannot be: it matches field names
// case-insensitively, keeps the last of duplicate keys, and reports type
// errors without an array index. The scan walks the token stream once
// against a schema derived from the Plan type's json tags and reports
// syntax errors, nesting deeper than the limit and trailing data (fatal),
// and unknown or case-mismatched fields, duplicate keys and values of the
// wrong type (collected, with their JSON path).

// maxScanProblems bounds how many problems one scan collects.
const maxScanProblems = 100

// shape is what the schema expects at one place in the document.
type shape int

const (
	shapeAny shape = iota // anything: step input
	shapeString
	shapeInt
	shapeFloat
	shapeDuration
	shapeObject
	shapeArray
)

// schema describes the expected JSON at one place in the document.
type schema struct {
	shape  shape
	fields map[string]*schema // shapeObject: the exact field names
	elem   *schema            // shapeArray: the element schema
}

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	durationType   = reflect.TypeFor[Duration]()
)

// planSchema is the schema of a Plan document, derived once from its tags.
var planSchema = sync.OnceValue(func() *schema { return schemaOf(reflect.TypeFor[Plan]()) })

func schemaOf(t reflect.Type) *schema {
	switch t {
	case rawMessageType:
		return &schema{shape: shapeAny}
	case durationType:
		return &schema{shape: shapeDuration}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem())
	case reflect.String:
		return &schema{shape: shapeString}
	case reflect.Int, reflect.Int64, reflect.Int32:
		return &schema{shape: shapeInt}
	case reflect.Float64:
		return &schema{shape: shapeFloat}
	case reflect.Slice:
		return &schema{shape: shapeArray, elem: schemaOf(t.Elem())}
	case reflect.Struct:
		s := &schema{shape: shapeObject, fields: make(map[string]*schema, t.NumField())}
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.IsExported() && name != "" && name != "-" {
				s.fields[name] = schemaOf(f.Type)
			}
		}
		return s
	default:
		return &schema{shape: shapeAny}
	}
}

// errFatal stops a scan; the problem is already recorded.
var errFatal = errors.New("fatal")

type scanner struct {
	dec      *json.Decoder
	maxDepth int
	problems problems
	version  json.Number // the top-level schemaVersion, when a number
}

// scanStrict checks data, a JSON document, against the plan schema. It
// returns the problems found (none when data may be decoded) and the
// document's schemaVersion, when it has a numeric one.
func scanStrict(data []byte, maxDepth int) (problems, json.Number) {
	s := &scanner{dec: json.NewDecoder(bytes.NewReader(data)), maxDepth: maxDepth}
	s.dec.UseNumber()
	if err := s.top(); err != nil {
		return s.problems, s.version
	}
	if _, err := s.dec.Token(); !errors.Is(err, io.EOF) {
		s.problems.add("", "", CodeMalformed, "trailing data after the plan at byte offset %d", s.dec.InputOffset())
	}
	return s.problems, s.version
}

func (s *scanner) top() error {
	tok, err := s.token("")
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return s.fatal("", "a plan must be a JSON object")
	}
	return s.object("", planSchema(), 1)
}

func (s *scanner) add(path, code, format string, args ...any) error {
	s.problems.add("", path, code, format, args...)
	if len(s.problems) >= maxScanProblems {
		return errFatal
	}
	return nil
}

func (s *scanner) fatal(path, format string, args ...any) error {
	s.problems.add("", path, CodeMalformed, format, args...)
	return errFatal
}

// token reads the next token, turning a syntax error into a fatal problem.
func (s *scanner) token(path string) (json.Token, error) {
	tok, err := s.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, s.fatal(path, "invalid JSON near byte offset %d: %v", s.dec.InputOffset(), err)
	}
	return tok, nil
}

// value scans the value that starts with tok at path, at nesting depth
// depth (that of its container), against sc.
func (s *scanner) value(tok json.Token, path string, sc *schema, depth int) error {
	if d, ok := tok.(json.Delim); ok {
		if depth+1 > s.maxDepth {
			s.problems.add("", path, CodeTooDeep, "nested deeper than the limit of %d", s.maxDepth)
			return errFatal
		}
		if d == '{' {
			return s.object(path, sc, depth+1)
		}
		return s.array(path, sc, depth+1)
	}
	return s.checkScalar(tok, path, sc)
}

func (s *scanner) object(path string, sc *schema, depth int) error {
	if sc.shape != shapeAny && sc.shape != shapeObject {
		if err := s.add(path, CodeMalformed, "must be %s, not an object", sc.shape); err != nil {
			return err
		}
		sc = &schema{shape: shapeAny}
	}
	seen := make(map[string]bool)
	for s.dec.More() {
		tok, err := s.token(path)
		if err != nil {
			return err
		}
		key, _ := tok.(string) // Token only returns strings as keys
		child := &schema{shape: shapeAny}
		switch {
		case seen[key]:
			err = s.add(path, CodeDuplicateKey, "key %s appears more than once", keyName(key))
		case sc.shape == shapeObject && sc.fields[key] == nil:
			err = s.add(childPath(path, key), CodeUnknownField, "unknown field %s%s", keyName(key), s.hint(sc, key))
		case sc.shape == shapeObject:
			child = sc.fields[key]
		}
		if err != nil {
			return err
		}
		seen[key] = true
		if err := s.member(path, key, child, depth); err != nil {
			return err
		}
	}
	_, err := s.token(path) // '}'
	return err
}

// member scans the value of key in the object at path.
func (s *scanner) member(path, key string, sc *schema, depth int) error {
	p := childPath(path, key)
	tok, err := s.token(p)
	if err != nil {
		return err
	}
	if path == "" && key == "schemaVersion" {
		s.version, _ = tok.(json.Number)
	}
	return s.value(tok, p, sc, depth)
}

// hint suggests the field a case-mismatched key was probably meant to be.
func (s *scanner) hint(sc *schema, key string) string {
	for name := range sc.fields {
		if strings.EqualFold(name, key) {
			return "; field names are case-sensitive, did you mean " + strconv.Quote(name) + "?"
		}
	}
	return ""
}

func (s *scanner) array(path string, sc *schema, depth int) error {
	elem := &schema{shape: shapeAny}
	switch sc.shape {
	case shapeArray:
		elem = sc.elem
	case shapeAny:
	default:
		if err := s.add(path, CodeMalformed, "must be %s, not an array", sc.shape); err != nil {
			return err
		}
	}
	for i := 0; s.dec.More(); i++ {
		p := indexPath(path, i)
		tok, err := s.token(p)
		if err != nil {
			return err
		}
		if tok == nil && elem.shape != shapeAny {
			err = s.add(p, CodeMalformed, "must be %s, not null", elem.shape)
		} else {
			err = s.value(tok, p, elem, depth)
		}
		if err != nil {
			return err
		}
	}
	_, err := s.token(path) // ']'
	return err
}

// checkScalar checks a non-container token. JSON null is accepted for any
// object member and means the member is absent.
func (s *scanner) checkScalar(tok json.Token, path string, sc *schema) error {
	if tok == nil || sc.shape == shapeAny {
		return nil
	}
	ok := false
	switch v := tok.(type) {
	case string:
		ok = sc.shape == shapeString
		if sc.shape == shapeDuration {
			_, err := parseDuration(v)
			if err != nil {
				return s.add(path, CodeMalformed, "%v", err)
			}
			ok = true
		}
	case json.Number:
		ok = validNumber(v, sc.shape)
	}
	if !ok {
		return s.add(path, CodeMalformed, "must be %s", sc.shape)
	}
	return nil
}

func validNumber(n json.Number, sh shape) bool {
	switch sh {
	case shapeInt:
		_, err := strconv.ParseInt(string(n), 10, 0)
		return err == nil
	case shapeFloat:
		f, err := strconv.ParseFloat(string(n), 64)
		return err == nil && !math.IsInf(f, 0)
	default:
		return false
	}
}

// String names the shape for messages.
func (sh shape) String() string {
	switch sh {
	case shapeString:
		return "a string"
	case shapeInt:
		return "an integer"
	case shapeFloat:
		return "a number"
	case shapeDuration:
		return `a duration string such as "30s"`
	case shapeObject:
		return "an object"
	case shapeArray:
		return "an array"
	default:
		return "a JSON value"
	}
}

// keyName renders an object key for a message, redacting one that itself
// looks like a credential.
func keyName(key string) string {
	if _, ok := SecretShape(key); ok {
		return `"<redacted>"`
	}
	return quote(key)
}
