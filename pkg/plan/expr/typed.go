package expr

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// The JSON Schema types Scope.InputTypes may give a property of the
// run's input, and the CEL type an expression reads input.<name> as.
// A JSON number is a CEL double; an integer is a CEL int.
var inputTypes = map[string]*cel.Type{
	"number":  cel.DoubleType,
	"integer": cel.IntType,
	"string":  cel.StringType,
	"boolean": cel.BoolType,
	"object":  cel.MapType(cel.StringType, cel.DynType),
	"array":   cel.ListType(cel.DynType),
	"null":    cel.NullType,
}

// IsInputType reports whether t is a JSON Schema type name that
// Scope.InputTypes may hold.
func IsInputType(t string) bool { return inputTypes[t] != nil }

// maxTypedEnvs bounds the environments kept for scopes with input types;
// the cache is emptied when it is full.
const maxTypedEnvs = 256

// typedEnvs caches the environments of scopes with input types, by
// typedKey.
var typedEnvs = struct {
	sync.Mutex
	m map[string]*cel.Env
}{m: map[string]*cel.Env{}}

// typedKey renders s's forEach flag and input types, sorted by name,
// each quoted: what its environment depends on, without ambiguity.
func typedKey(s Scope) string {
	var b strings.Builder
	b.WriteString(strconv.FormatBool(s.ForEach))
	for _, name := range slices.Sorted(maps.Keys(s.InputTypes)) {
		b.WriteString(" " + strconv.Quote(name) + ":" + strconv.Quote(s.InputTypes[name]))
	}
	return b.String()
}

// typedEnv returns base extended with a variable input.<name> of each of
// s's input types that IsInputType names: CEL resolves the qualified name
// input.total to it, so its type is known at submission.
func typedEnv(base *cel.Env, s Scope) (*cel.Env, error) {
	key := typedKey(s)
	typedEnvs.Lock()
	env, ok := typedEnvs.m[key]
	typedEnvs.Unlock()
	if ok {
		return env, nil
	}
	var opts []cel.EnvOption
	for _, name := range slices.Sorted(maps.Keys(s.InputTypes)) {
		if t := inputTypes[s.InputTypes[name]]; t != nil {
			opts = append(opts, cel.Variable(varInput+"."+name, t))
		}
	}
	compiling.Lock() // Extend reads the checker environment Compile writes
	env, err := base.Extend(opts...)
	compiling.Unlock()
	if err != nil {
		return nil, fmt.Errorf("expr: build the CEL environment of the input's types: %w", err)
	}
	typedEnvs.Lock()
	defer typedEnvs.Unlock()
	if len(typedEnvs.m) >= maxTypedEnvs {
		typedEnvs.m = map[string]*cel.Env{}
	}
	typedEnvs.m[key] = env
	return env, nil
}

// bindTyped adds to act, an activation whose input binding is input, a
// binding of input.<name> for each of the input types: the input's
// member name, a number as the type says (a whole number read as an int
// becomes a double for "number", a whole double an int for "integer"),
// or an error naming the key when the input has none.
func bindTyped(act map[string]any, inputTypes map[string]string, input func() ref.Val) {
	for name, t := range inputTypes {
		if !IsInputType(t) {
			continue
		}
		act[varInput+"."+name] = func() ref.Val {
			in := input()
			if types.IsError(in) {
				return in
			}
			m, ok := in.(traits.Mapper)
			if !ok {
				return types.NewErrFromString(fmt.Sprintf("no such key: %s (the input is not an object)", name))
			}
			v, found := m.Find(types.String(name))
			if !found {
				return types.NewErrFromString("no such key: " + name)
			}
			return asDeclared(v, t)
		}
	}
}

// asDeclared returns v, a member of the input, as a value of the JSON
// Schema type t where the two number types differ.
func asDeclared(v ref.Val, t string) ref.Val {
	switch n := v.(type) {
	case types.Int:
		if t == "number" {
			return types.Double(n)
		}
	case types.Double:
		if t == "integer" && n >= math.MinInt64 && n < math.MaxInt64 && float64(n) == float64(int64(n)) {
			return types.Int(int64(n))
		}
	}
	return v
}
