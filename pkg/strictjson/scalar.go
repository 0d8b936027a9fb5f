package strictjson

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// scalar checks a string, number or boolean against sc.
func (s *scanner) scalar(tok json.Token, path string, sc *schema) error {
	if n, ok := tok.(json.Number); ok && s.opts.Numeric && !numericFits(string(n)) {
		return s.add(path, CodeOutOfRange, "is a number out of the range Postgres numeric can store"+
			" (at most 10^%d, %d digits after the point)", NumericMaxLeadingExponent, NumericMaxScale)
	}
	if str, ok := tok.(string); ok && s.opts.NoNUL && strings.IndexByte(str, 0) >= 0 {
		return s.add(path, CodeNUL, `must not contain the escape \u0000 (Postgres jsonb cannot hold it)`)
	}
	if sc.kind == kText {
		str, ok := tok.(string)
		if !ok {
			return s.add(path, CodeWrongType, "must be %s", sc)
		}
		return s.method(path, unmarshalText(sc.typ, str))
	}
	if !literalOK(tok, sc) {
		return s.add(path, CodeWrongType, "must be %s", sc)
	}
	return nil
}

// literalOK reports whether the scalar token tok fits sc, which is neither
// kText nor kQuoted.
func literalOK(tok json.Token, sc *schema) bool {
	switch v := tok.(type) {
	case string:
		switch sc.kind {
		case kBytes:
			_, err := base64.StdEncoding.DecodeString(v)
			return err == nil
		case kNumber:
			n, ok := literal(v)
			_, isNumber := n.(json.Number)
			return ok && isNumber
		default:
			return sc.kind == kString || sc.kind == kAny
		}
	case json.Number:
		return numberOK(string(v), sc)
	case bool:
		return sc.kind == kBool || sc.kind == kAny
	default:
		return false
	}
}

// numberOK reports whether the number n fits sc, parsed as encoding/json
// parses it.
func numberOK(n string, sc *schema) bool {
	var err error
	switch sc.kind {
	case kNumber:
	case kAny:
		if sc.bits > 0 {
			_, err = strconv.ParseFloat(n, sc.bits)
		}
	case kInt:
		_, err = strconv.ParseInt(n, 10, sc.bits)
	case kUint:
		_, err = strconv.ParseUint(n, 10, sc.bits)
	case kFloat:
		_, err = strconv.ParseFloat(n, sc.bits) // out of range: ±Inf and an error
	default:
		return false
	}
	return err == nil
}

// quoted checks the value of a ",string" field: a string holding one
// literal of the field's type (or null).
func (s *scanner) quoted(tok json.Token, path string, sc *schema) error {
	str, ok := tok.(string)
	if ok {
		inner, innerOK := literal(str)
		elem := sc.elem.deref()
		ok = innerOK && (inner == nil || literalOK(inner, elem))
	}
	if !ok {
		return s.add(path, CodeWrongType, "must be %s", sc)
	}
	return nil
}

// literal parses s as exactly one JSON scalar, without surrounding white
// space, and rejects a lone surrogate escape in it.
func literal(s string) (json.Token, bool) {
	if s == "" || strings.Trim(s, " \t\r\n") != s || loneSurrogate([]byte(s)) >= 0 {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	tok, err := dec.Token()
	if _, delim := tok.(json.Delim); err != nil || delim {
		return nil, false
	}
	_, err = dec.Token()
	return tok, errors.Is(err, io.EOF)
}

// judged scans the value that starts with tok against sc's shape and then
// has the type's UnmarshalJSON judge it: always, for a type with its own
// encoding, whose shape is any value; for another, only when its shape is
// right. The method's complaint goes before any found inside the value.
func (s *scanner) judged(tok json.Token, path string, sc *schema, depth int) error {
	start, n := s.start, len(s.problems)
	if err := s.shape(tok, path, sc, depth); err != nil || len(s.problems) > n && sc.kind != kAny {
		return err
	}
	raw := bytes.TrimLeft(s.data[start:s.dec.InputOffset()], " \t\r\n:,")
	if err := unmarshalJSON(sc.typ, raw); err != nil {
		s.problems = slices.Insert(s.problems, n, Problem{Path: path, Code: CodeWrongType, Message: err.Error()})
		if len(s.problems) >= s.opts.MaxProblems {
			return errStop
		}
	}
	return nil
}

// method records err, from a type's UnmarshalJSON or UnmarshalText method,
// as the problem of the value at path.
func (s *scanner) method(path string, err error) error {
	if err != nil {
		return s.add(path, CodeWrongType, "%v", err)
	}
	return nil
}

func unmarshalJSON(t reflect.Type, raw []byte) error {
	u, _ := reflect.New(t).Interface().(json.Unmarshaler)
	return u.UnmarshalJSON(raw)
}

func unmarshalText(t reflect.Type, s string) error {
	u, _ := reflect.New(t).Interface().(encoding.TextUnmarshaler)
	return u.UnmarshalText([]byte(s))
}

// mapKey checks a key of the map object at path against the key's shape
// ks (nil: any string).
func (s *scanner) mapKey(path, key string, ks *schema) error {
	var err error
	switch {
	case ks == nil:
	case ks.judge:
		raw, _ := json.Marshal(key) // a string cannot fail to encode
		err = unmarshalJSON(ks.typ, raw)
	case ks.kind == kText:
		err = unmarshalText(ks.typ, key)
	case !numberOK(key, ks):
		return s.add(path, CodeWrongType, "key %s must be %s", s.keyName(key), ks)
	}
	if err != nil {
		return s.add(path, CodeWrongType, "key %s: %v", s.keyName(key), err)
	}
	return nil
}
