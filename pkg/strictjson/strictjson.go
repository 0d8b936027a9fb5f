package strictjson

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Problem codes. They are stable: callers map them onto their own codes.
const (
	// CodeMalformed: a syntax error, data after the value, or a top level
	// that is not an object where an object is expected.
	CodeMalformed = "malformed"
	// CodeInvalidUTF8: invalid UTF-8, or a \u escape that is half of a
	// UTF-16 surrogate pair.
	CodeInvalidUTF8 = "invalid_utf8"
	// CodeTooDeep: objects and arrays nested deeper than Options.MaxDepth.
	CodeTooDeep = "too_deep"
	// CodeDuplicateKey: the same key twice in one object.
	CodeDuplicateKey = "duplicate_key"
	// CodeUnknownField: a key that names no field of the struct; names are
	// compared case-sensitively.
	CodeUnknownField = "unknown_field"
	// CodeWrongType: a value of the wrong type or out of range for its Go
	// type, or one that the type's own UnmarshalJSON or UnmarshalText
	// rejects.
	CodeWrongType = "wrong_type"
	// CodeOutOfRange: a number Postgres numeric cannot hold, with
	// Options.Numeric set.
	CodeOutOfRange = "out_of_range"
	// CodeNUL: a string or key holding U+0000 (the escape \u0000), with
	// Options.NoNUL set.
	CodeNUL = "nul"
)

// Defaults of Options.
const (
	DefaultMaxDepth    = 32
	DefaultMaxProblems = 100
	DefaultDocument    = "document"
)

// Options tunes a check. The zero value means the defaults.
type Options struct {
	// MaxDepth bounds the nesting of objects and arrays; the top level is
	// depth 1 and a document exactly at the limit passes. Zero or negative
	// means DefaultMaxDepth.
	MaxDepth int
	// MaxProblems bounds how many problems one check collects before it
	// stops. Zero or negative means DefaultMaxProblems.
	MaxProblems int
	// Document is what messages call the whole input: "a plan must be a
	// JSON object", "trailing data after the request body". Empty means
	// DefaultDocument.
	Document string
	// Redact reports whether an object key must not appear in messages or
	// paths, because it looks like a credential itself; such a key shows
	// as "<redacted>". Nil redacts nothing.
	Redact func(key string) bool
	// Visit, when set, is called with the path and the first token of every
	// value the scan reads (a string, json.Number, bool, nil, or the
	// json.Delim that opens an object or array), in document order, before
	// the value is checked, and also in documents that turn out to have
	// problems, up to the one that stops the scan. It lets a caller look at
	// a value, such as a version number, before it knows whether the
	// document is valid.
	Visit func(path string, tok json.Token)
	// Numeric, when set, refuses (CodeOutOfRange) any number a Postgres
	// numeric, and so a jsonb column, cannot hold, wherever it is in the
	// document (see NumericMaxLeadingExponent): a caller that stores the
	// document as jsonb learns of it here, not from the database.
	Numeric bool
	// NoNUL, when set, refuses (CodeNUL) a string or key holding U+0000,
	// which a jsonb column and Postgres text cannot hold. With Numeric it
	// makes a valid document one jsonb stores as it is.
	NoNUL bool
}

func (o Options) withDefaults() Options {
	o.MaxDepth = cmp.Or(max(o.MaxDepth, 0), DefaultMaxDepth)
	o.MaxProblems = cmp.Or(max(o.MaxProblems, 0), DefaultMaxProblems)
	o.Document = cmp.Or(o.Document, DefaultDocument)
	return o
}

// Problem is one thing wrong with a document.
type Problem struct {
	// Path is the JSON path of the offending value, or of the object that
	// holds a duplicate key: "" for the whole document, "a.b[2].c",
	// `a["key with spaces"]` (see MemberPath).
	Path string
	// Code is one of the Code… constants.
	Code string
	// Message says what is wrong, for people.
	Message string
}

// String renders the problem as "path: message", or the message alone for
// a problem of the whole document.
func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// Error is the error Decode, Valid and CheckUTF8 return for a document they
// reject. It lists the problems in document order.
type Error struct {
	Problems []Problem
}

// maxProblemsInError bounds how many problems Error spells out.
const maxProblemsInError = 5

// Error implements error: the problems up to five, joined with "; ".
func (e *Error) Error() string {
	if len(e.Problems) == 0 {
		return "invalid JSON"
	}
	return Summarize(e.Problems, maxProblemsInError)
}

// Summarize renders a non-empty list of problems for an error message: the
// one problem alone, or "N problems: a; b; …" naming at most limit of them
// and counting the rest ("; and 3 more").
func Summarize[P fmt.Stringer](ps []P, limit int) string {
	if len(ps) == 1 {
		return ps[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems: ", len(ps))
	for i, p := range ps {
		if i == limit {
			fmt.Fprintf(&b, "; and %d more", len(ps)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Has reports whether any problem has the given code.
func (e *Error) Has(code string) bool {
	for _, p := range e.Problems {
		if p.Code == code {
			return true
		}
	}
	return false
}

// errorOf returns nil for no problems, else an *Error holding them.
func errorOf(ps []Problem) error {
	if len(ps) == 0 {
		return nil
	}
	return &Error{Problems: ps}
}

// Decode checks data strictly against the type v points to and, only if
// it finds no problem, decodes it into v with json.Unmarshal. It returns an
// *Error listing the problems, or a *json.InvalidUnmarshalError when v is
// not a non-nil pointer. Safe for concurrent use; the schema of each type
// is derived once and cached.
//
// The shapes the Go types take, following their json tags:
//
//   - string kinds: a string; bool: true or false;
//   - integer kinds: an integer (no fraction or exponent) that fits the
//     type, so 1<<31 is rejected for an int32 and -1 for any unsigned type;
//   - float kinds: a number that is finite in the type (1e400 is not);
//   - structs: an object whose keys are exactly the fields' json names,
//     with embedded structs flattened as encoding/json does; fields tagged
//     "-" and unexported fields are not keys; a field tagged ",string" is a
//     string holding a literal of its type;
//   - maps: an object of the element's shape, whose keys must parse as the
//     key type (an integer, or through UnmarshalText);
//   - slices and arrays: an array of the element's shape (for an array, at
//     most its length); []byte is a base64 string or an array of bytes;
//   - pointers: the element's shape; json.RawMessage: any value;
//     interfaces: any value whose numbers are finite float64s; json.Number:
//     a number, or a string holding one;
//   - a type with an UnmarshalJSON method and its own encoding (a
//     MarshalJSON or MarshalText method, as time.Time has): any value the
//     method accepts; one with UnmarshalJSON alone, which encodes by its Go
//     shape (a struct filling in defaults, say): that shape, and then the
//     method must accept it too; one with only UnmarshalText: a string the
//     method accepts. To report such a method's error with its path, the
//     scan calls it on a fresh zero value of the type.
//
// A type encoding/json cannot decode into (a channel, a non-empty
// interface, a map with unsupported keys) is checked as any value, and
// the final json.Unmarshal reports it as a CodeWrongType problem of the
// whole document; so does any other error from that decode, after which
// v may be partly written.
func Decode(data []byte, v any, opts Options) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &json.InvalidUnmarshalError{Type: reflect.TypeOf(v)}
	}
	if err := errorOf(scan(data, schemaFor(rv.Type()), opts.withDefaults())); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return errorOf([]Problem{{Code: CodeWrongType, Message: err.Error()}})
	}
	return nil
}

// Valid checks that data is one strict JSON value of any shape: valid
// UTF-8 without lone surrogate escapes, no duplicate keys at any depth,
// nesting within opts.MaxDepth, no syntax error and nothing after the
// value but white space. It returns nil or an *Error. Safe for concurrent
// use.
func Valid(data []byte, opts Options) error {
	return errorOf(scan(data, anySchema, opts.withDefaults()))
}

// CheckUTF8 returns an *Error with a CodeInvalidUTF8 problem naming the
// offset of the first invalid UTF-8 byte in data, or nil. Decode and Valid
// check this themselves; CheckUTF8 is for text in another format, such as
// YAML, that is converted to JSON, whose converter would otherwise reject
// or replace the bytes in its own way.
func CheckUTF8(data []byte) error {
	if off := invalidUTF8(data); off >= 0 {
		return errorOf([]Problem{utf8Problem(off)})
	}
	return nil
}
