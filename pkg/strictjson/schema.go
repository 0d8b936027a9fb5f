package strictjson

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// kind is the shape of JSON a schema expects.
type kind uint8

const (
	kAny    kind = iota // any value; with bits 64, its numbers must be finite float64s
	kString             // a string
	kBool               // true or false
	kInt                // an integer that fits bits
	kUint               // a non-negative integer that fits bits
	kFloat              // a number, finite in bits
	kNumber             // json.Number: a number, or a string holding one
	kBytes              // []byte: a base64 string, or an array of elem
	kStruct             // an object with exactly the keys of fields
	kMap                // an object of elem values, keys checked against key
	kArray              // an array of elem, at most maxLen long unless maxLen < 0
	kPtr                // null or elem
	kQuoted             // a ",string" field: a string holding an elem literal
	kText               // an encoding.TextUnmarshaler: a string typ's UnmarshalText accepts
)

// schema describes the JSON expected at one place in a document. Schemas
// are built once per Go type and never modified afterwards.
type schema struct {
	kind   kind
	bits   int                // kInt, kUint, kFloat: the type's size (0: int's)
	typ    reflect.Type       // kText, and when judge is set
	judge  bool               // typ's UnmarshalJSON judges the value too
	fields map[string]*schema // kStruct: by json name
	names  []string           // kStruct: the json names in declaration order
	elem   *schema            // kBytes, kMap, kArray, kPtr, kQuoted
	key    *schema            // kMap: the key's shape; nil for string keys
	maxLen int                // kArray
}

// anySchema accepts any value. ifaceSchema accepts any value that
// encoding/json can decode into an interface{}: one whose numbers are
// finite float64s.
var (
	anySchema   = &schema{kind: kAny}
	ifaceSchema = &schema{kind: kAny, bits: 64}
)

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	numberType      = reflect.TypeFor[json.Number]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
	marshalerType   = reflect.TypeFor[json.Marshaler]()
	textMarshalType = reflect.TypeFor[encoding.TextMarshaler]()
)

// schemas caches the schema of each type Decode has seen.
var schemas sync.Map // reflect.Type → *schema

// schemaFor returns the schema of t, building it on first use.
func schemaFor(t reflect.Type) *schema {
	if sc, ok := schemas.Load(t); ok {
		return sc.(*schema)
	}
	b := builder{seen: map[reflect.Type]*schema{}}
	sc, _ := schemas.LoadOrStore(t, b.build(t))
	return sc.(*schema)
}

// builder builds the schema of one type. It records each type's schema
// before filling it in, so that recursive types terminate.
type builder struct {
	seen map[reflect.Type]*schema
}

func (b *builder) build(t reflect.Type) *schema {
	if sc, ok := b.seen[t]; ok {
		return sc
	}
	sc := &schema{}
	b.seen[t] = sc
	b.fill(sc, t)
	return sc
}

func (b *builder) fill(sc *schema, t reflect.Type) {
	if b.fillSpecial(sc, t) {
		return
	}
	switch t.Kind() {
	case reflect.String:
		sc.kind = kString
	case reflect.Bool:
		sc.kind = kBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		sc.kind, sc.bits = kInt, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		sc.kind, sc.bits = kUint, t.Bits()
	case reflect.Float32, reflect.Float64:
		sc.kind, sc.bits = kFloat, t.Bits()
	case reflect.Slice:
		sc.kind, sc.elem, sc.maxLen = kArray, b.build(t.Elem()), -1
		if t.Elem().Kind() == reflect.Uint8 {
			sc.kind = kBytes
		}
	case reflect.Array:
		sc.kind, sc.elem, sc.maxLen = kArray, b.build(t.Elem()), t.Len()
	case reflect.Map:
		b.fillMap(sc, t)
	case reflect.Struct:
		b.fillStruct(sc, t)
	default: // kinds encoding/json rejects are left to it
		sc.kind = kAny
	}
}

// fillSpecial fills in the schema of the types whose JSON shape is not
// that of their kind, and reports whether t was one. A type whose
// UnmarshalJSON judges it after its kind's shape is only marked.
func (b *builder) fillSpecial(sc *schema, t reflect.Type) bool {
	switch {
	case t == rawMessageType:
		sc.kind = kAny
	case t == numberType:
		sc.kind = kNumber
	case t.Kind() == reflect.Pointer:
		sc.kind, sc.elem = kPtr, b.build(t.Elem())
	case t.Kind() == reflect.Interface:
		*sc = *ifaceSchema // a non-empty one is left to encoding/json
	case implements(t, unmarshalerType):
		sc.typ, sc.judge = t, true
		// With its own encoding, any value its UnmarshalJSON takes; else
		// it encodes by its kind, and that is its shape too.
		return implements(t, marshalerType) || implements(t, textMarshalType)
	case implements(t, textType):
		sc.kind, sc.typ = kText, t
	default:
		return false
	}
	return true
}

// implements reports whether t or *t implements the interface type it.
func implements(t, it reflect.Type) bool { return reflect.PointerTo(t).Implements(it) }

// fillMap fills in the schema of a map type. Keys are checked as
// encoding/json decodes them: through UnmarshalText when the key type has
// it, else as a string or an integer.
func (b *builder) fillMap(sc *schema, t reflect.Type) {
	kt := t.Key()
	switch k := kt.Kind(); {
	case implements(kt, textType):
		sc.key = b.build(kt) // kText, or judged by UnmarshalJSON when it has one
	case k == reflect.String:
	case k >= reflect.Int && k <= reflect.Int64:
		sc.key = &schema{kind: kInt, bits: kt.Bits()}
	case k >= reflect.Uint && k <= reflect.Uintptr:
		sc.key = &schema{kind: kUint, bits: kt.Bits()}
	default:
		sc.kind = kAny // encoding/json rejects the type; leave it to it
		return
	}
	sc.kind, sc.elem = kMap, b.build(t.Elem())
}

// field is one candidate key of a struct, found at a depth of embedding.
type field struct {
	name   string
	depth  int
	tagged bool
	sc     *schema
}

// fillStruct fills in the schema of a struct type. Among fields with the
// same name, as in encoding/json, the least embedded wins, then the only
// one named by a tag; a tie leaves the name out.
func (b *builder) fillStruct(sc *schema, t reflect.Type) {
	var all []field
	b.collect(t, 0, map[reflect.Type]bool{}, &all)
	sc.kind, sc.fields = kStruct, make(map[string]*schema, len(all))
	decided := map[string]bool{}
	for _, f := range all {
		if decided[f.name] {
			continue
		}
		decided[f.name] = true
		if win, ok := dominant(all, f.name); ok {
			sc.fields[f.name] = win.sc
			sc.names = append(sc.names, f.name)
		}
	}
}

// collect appends the fields of struct t, embedded at depth, to out,
// descending into embedded structs that have no json name.
func (b *builder) collect(t reflect.Type, depth int, visited map[reflect.Type]bool, out *[]field) {
	if visited[t] {
		return
	}
	visited[t] = true
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case f.Anonymous && name == "" && ft.Kind() == reflect.Struct:
			b.collect(ft, depth+1, visited, out)
			continue
		case !f.IsExported():
			continue
		}
		tagged := name != ""
		if !tagged {
			name = f.Name
		}
		*out = append(*out, field{name: name, depth: depth, tagged: tagged, sc: b.fieldSchema(f.Type, opts)})
	}
}

// fieldSchema is the schema of a struct field of type t with tag options
// opts: a ",string" option on a scalar field makes it a quoted literal.
func (b *builder) fieldSchema(t reflect.Type, opts string) *schema {
	sc := b.build(t)
	quoted := false
	for o := range strings.SplitSeq(opts, ",") {
		quoted = quoted || o == "string"
	}
	base := sc
	if t.Name() == "" && base.kind == kPtr {
		base = base.elem // encoding/json looks through one unnamed pointer
	}
	if base.judge {
		return sc // encoding/json hands the inner literal to UnmarshalJSON
	}
	switch base.kind {
	case kString, kBool, kInt, kUint, kFloat, kNumber:
		if quoted {
			return &schema{kind: kQuoted, elem: sc}
		}
	default:
	}
	return sc
}

// dominant returns the field that name stands for among all, if any.
func dominant(all []field, name string) (field, bool) {
	var best []field
	for _, f := range all {
		switch {
		case f.name != name:
		case len(best) == 0 || f.depth < best[0].depth:
			best = []field{f}
		case f.depth == best[0].depth:
			best = append(best, f)
		}
	}
	if len(best) == 1 {
		return best[0], true
	}
	var win []field
	for _, f := range best {
		if f.tagged {
			win = append(win, f)
		}
	}
	if len(win) == 1 {
		return win[0], true
	}
	return field{}, false
}

// deref follows pointers to the schema of the value they point to.
func (sc *schema) deref() *schema {
	for range 8 {
		if sc.kind != kPtr {
			return sc
		}
		sc = sc.elem
	}
	return anySchema // a pointer type that points to itself
}

// anyElem is the schema of the members and elements of an object or array
// of schema sc, which is kAny.
func (sc *schema) anyElem() *schema {
	if sc.bits > 0 {
		return ifaceSchema
	}
	return anySchema
}

// String describes the expected value for messages: "must be <String>".
func (sc *schema) String() string {
	switch sc = sc.deref(); sc.kind {
	case kString, kText:
		return "a string"
	case kBool:
		return "true or false"
	case kInt:
		return sized("a", sc.bits)
	case kUint:
		return sized("a non-negative", sc.bits)
	case kFloat, kNumber:
		return "a number"
	case kBytes:
		return "a base64 string"
	case kStruct, kMap:
		return "an object"
	case kArray:
		return "an array"
	case kQuoted:
		return "a string holding " + sc.elem.String()
	case kAny:
		if sc.bits > 0 {
			return "a number within the range of a float64"
		}
		return "a JSON value"
	default:
		return "a JSON value"
	}
}

// sized describes an integer shape: "an integer" for 64 bits, else with
// its size ("a 32-bit integer", "an 8-bit integer").
func sized(prefix string, bits int) string {
	switch {
	case bits == 64 && prefix == "a":
		return "an integer"
	case bits == 64:
		return prefix + " integer"
	case bits == 8 && prefix == "a":
		return "an 8-bit integer"
	default:
		return fmt.Sprintf("%s %d-bit integer", prefix, bits)
	}
}
