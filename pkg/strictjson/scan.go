package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// errStop stops a scan; the problem that stops it is already recorded.
var errStop = errors.New("scan stopped")

// scanner walks the token stream of one document once, against a schema.
type scanner struct {
	data     []byte
	dec      *json.Decoder
	opts     Options
	problems []Problem
	start    int64 // the input offset before the token read last
}

// scan checks data against sc and returns the problems found, in document
// order; none when data may be decoded.
func scan(data []byte, sc *schema, opts Options) []Problem {
	if off := invalidUTF8(data); off >= 0 {
		return []Problem{utf8Problem(off)}
	}
	if off := loneSurrogate(data); off >= 0 {
		return []Problem{surrogateProblem(off)}
	}
	s := &scanner{data: data, dec: json.NewDecoder(bytes.NewReader(data)), opts: opts}
	s.dec.UseNumber()
	if s.top(sc) != nil {
		return s.problems
	}
	end := int(s.dec.InputOffset())
	if rest := bytes.TrimLeft(data[end:], " \t\r\n"); len(rest) > 0 {
		s.problems = append(s.problems, Problem{Code: CodeMalformed, Message: fmt.Sprintf(
			"trailing data after the %s at byte offset %d", opts.Document, len(data)-len(rest))})
	}
	return s.problems
}

// top scans the document's value.
func (s *scanner) top(sc *schema) error {
	tok, err := s.next("")
	if err != nil {
		return err
	}
	sc = sc.deref()
	switch {
	case (sc.kind == kStruct || sc.kind == kMap) && tok != json.Delim('{'):
		return s.fatal("", CodeMalformed, "a %s must be a JSON object", s.opts.Document)
	case tok == nil && sc.kind != kAny:
		return s.add("", CodeWrongType, "must be %s, not null", sc)
	}
	return s.value(tok, "", sc, 0)
}

// add records a problem, and stops the scan when it is one too many.
func (s *scanner) add(path, code, format string, args ...any) error {
	s.problems = append(s.problems, Problem{Path: path, Code: code, Message: fmt.Sprintf(format, args...)})
	if len(s.problems) >= s.opts.MaxProblems {
		return errStop
	}
	return nil
}

// fatal records a problem and stops the scan.
func (s *scanner) fatal(path, code, format string, args ...any) error {
	s.problems = append(s.problems, Problem{Path: path, Code: code, Message: fmt.Sprintf(format, args...)})
	return errStop
}

// token reads the next token, turning a syntax error into a fatal problem.
func (s *scanner) token(path string) (json.Token, error) {
	s.start = s.dec.InputOffset()
	tok, err := s.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, s.fatal(path, CodeMalformed, "invalid JSON near byte offset %d: %v", s.dec.InputOffset(), err)
	}
	return tok, nil
}

// next reads the first token of the value at path and shows it to
// Options.Visit.
func (s *scanner) next(path string) (json.Token, error) {
	tok, err := s.token(path)
	if err == nil && s.opts.Visit != nil {
		s.opts.Visit(path, tok)
	}
	return tok, err
}

// value scans the value that starts with tok at path against sc. depth is
// that of the value's container (0 for the top level). tok is not null
// unless the value is an object member, where null means absent.
func (s *scanner) value(tok json.Token, path string, sc *schema, depth int) error {
	if tok == nil {
		return s.null(path, sc)
	}
	if sc = sc.deref(); sc.judge {
		return s.judged(tok, path, sc, depth)
	}
	return s.shape(tok, path, sc, depth)
}

// shape scans the value that starts with tok at path against sc's shape.
func (s *scanner) shape(tok json.Token, path string, sc *schema, depth int) error {
	if d, ok := tok.(json.Delim); ok {
		if depth+1 > s.opts.MaxDepth {
			return s.fatal(path, CodeTooDeep, "nested deeper than the limit of %d", s.opts.MaxDepth)
		}
		if d == '{' {
			return s.object(path, sc, depth+1)
		}
		return s.array(path, sc, depth+1)
	}
	if sc.kind == kQuoted {
		return s.quoted(tok, path, sc)
	}
	return s.scalar(tok, path, sc)
}

// null checks a null object member. encoding/json leaves the member alone,
// except that it hands null to an UnmarshalJSON method.
func (s *scanner) null(path string, sc *schema) error {
	if sc.judge {
		return s.method(path, unmarshalJSON(sc.typ, []byte("null")))
	}
	return nil
}

// mismatch records that the container at path does not have sc's shape,
// and returns the schema to scan its contents with.
func (s *scanner) mismatch(path string, sc *schema, what string) (*schema, error) {
	return anySchema, s.add(path, CodeWrongType, "must be %s, not %s", sc, what)
}

func (s *scanner) object(path string, sc *schema, depth int) error {
	if sc.kind != kAny && sc.kind != kStruct && sc.kind != kMap {
		var err error
		if sc, err = s.mismatch(path, sc, "an object"); err != nil {
			return err
		}
	}
	seen := make(map[string]bool)
	for s.dec.More() {
		tok, err := s.token(path)
		if err != nil {
			return err
		}
		key, _ := tok.(string) // Token only returns strings as keys
		if s.opts.NoNUL && strings.IndexByte(key, 0) >= 0 {
			if err := s.add(path, CodeNUL, `has a key that contains the escape \u0000 (Postgres jsonb cannot hold it)`); err != nil {
				return err
			}
		}
		child, err := s.key(path, key, sc, seen[key])
		if err != nil {
			return err
		}
		seen[key] = true
		p := MemberPath(path, key, s.opts.Redact)
		if tok, err = s.next(p); err != nil {
			return err
		}
		if err := s.value(tok, p, child, depth); err != nil {
			return err
		}
	}
	_, err := s.token(path) // '}'
	return err
}

// key checks a key of the object at path and returns the schema of its
// value.
func (s *scanner) key(path, key string, sc *schema, dup bool) (*schema, error) {
	switch {
	case dup:
		return anySchema, s.add(path, CodeDuplicateKey, "key %s appears more than once", s.keyName(key))
	case sc.kind == kMap:
		return sc.elem, s.mapKey(path, key, sc.key)
	case sc.kind == kStruct && sc.fields[key] == nil:
		return anySchema, s.add(MemberPath(path, key, s.opts.Redact), CodeUnknownField,
			"unknown field %s%s", s.keyName(key), hint(sc, key))
	case sc.kind == kStruct:
		return sc.fields[key], nil
	case sc.kind == kAny:
		return sc.anyElem(), nil
	default:
		return anySchema, nil
	}
}

func (s *scanner) keyName(key string) string { return KeyName(key, s.opts.Redact) }

// hint suggests the field a case-mismatched key was probably meant to be.
func hint(sc *schema, key string) string {
	for _, name := range sc.names {
		if strings.EqualFold(name, key) {
			return fmt.Sprintf("; field names are case-sensitive, did you mean %q?", name)
		}
	}
	return ""
}

func (s *scanner) array(path string, sc *schema, depth int) error {
	elem := anySchema
	switch sc.kind {
	case kArray, kBytes:
		elem = sc.elem
	case kAny:
		elem = sc.anyElem()
	default:
		if _, err := s.mismatch(path, sc, "an array"); err != nil {
			return err
		}
	}
	n := 0
	for ; s.dec.More(); n++ {
		p := IndexPath(path, n)
		tok, err := s.next(p)
		if err != nil {
			return err
		}
		if tok == nil && elem.kind != kAny {
			err = s.add(p, CodeWrongType, "%s", nullElement(elem))
		} else {
			err = s.value(tok, p, elem, depth)
		}
		if err != nil {
			return err
		}
	}
	if sc.kind == kArray && sc.maxLen >= 0 && n > sc.maxLen {
		if err := s.add(path, CodeWrongType, "must have at most %d elements", sc.maxLen); err != nil {
			return err
		}
	}
	_, err := s.token(path) // ']'
	return err
}

// nullElement says why null cannot be an array element of schema sc.
func nullElement(sc *schema) string {
	if sc = sc.deref(); sc.judge && sc.kind == kAny {
		return "must not be null"
	}
	return fmt.Sprintf("must be %s, not null", sc)
}
