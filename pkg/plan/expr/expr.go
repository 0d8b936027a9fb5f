package expr

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"
)

// The delimiters of an expression inside a JSON string.
const (
	Open  = "${{"
	Close = "}}"
)

// Default limits; see Limits.
const (
	DefaultMaxExpressionBytes = 4 << 10 // 4 KiB
	DefaultCostBudget         = 100_000
)

// Limits bounds expressions. The zero value of each field means its
// default; every bound is inclusive.
type Limits struct {
	// MaxExpressionBytes bounds the source of one expression, between its
	// delimiters, trimmed. Default 4 KiB.
	MaxExpressionBytes int
	// CostBudget bounds the work of evaluating one expression, in CEL's
	// runtime cost units (about one per operation, more for operations on
	// strings and lists in proportion to their size). An expression that
	// exceeds it fails to evaluate; one that reads no variable, and so
	// exceeds it in every run, does not compile. Default 100,000.
	CostBudget uint64
}

func (l Limits) withDefaults() Limits {
	return Limits{
		MaxExpressionBytes: cmp.Or(max(l.MaxExpressionBytes, 0), DefaultMaxExpressionBytes),
		CostBudget:         cmp.Or(l.CostBudget, DefaultCostBudget),
	}
}

// Scope is what the expressions of one step's input may refer to.
type Scope struct {
	// Ancestors lists the ids of the steps the step depends on, directly or
	// not: the only steps whose results it may read.
	Ancestors []string
	// ForEach puts item and index in scope.
	ForEach bool
	// InputTypes gives properties of the run's input a JSON Schema type
	// (number, integer, string, boolean, object, array, null; others are
	// ignored), by name: an expression reads input.<name> as the CEL type
	// of that type (double, int, string, bool, map, list, null), so a
	// mistake such as input.total + "a" is refused at compilation. Other
	// reads of the input (input["total"], has(input.total), other
	// properties) are typed at run time, as they are without InputTypes.
	InputTypes map[string]string
}

// The variables an expression sees.
const (
	varInput = "input"
	varSteps = "steps"
	varRun   = "run"
	varItem  = "item"
	varIndex = "index"
)

// The environments: without and with a forEach's item and index. Building
// one takes a few milliseconds, so each is built once.
var (
	plainEnv   = sync.OnceValues(func() (*cel.Env, error) { return newEnv(false) })
	forEachEnv = sync.OnceValues(func() (*cel.Env, error) { return newEnv(true) })
)

// newEnv returns the CEL environment of Weft's expressions: the standard
// library with the strings, math, lists and encoders extensions and
// optional types, and no clock, randomness or I/O.
func newEnv(forEach bool) (*cel.Env, error) {
	opts := append(library(),
		cel.Variable(varInput, cel.DynType),
		cel.Variable(varSteps, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varRun, cel.MapType(cel.StringType, cel.StringType)),
	)
	if forEach {
		opts = append(opts, cel.Variable(varItem, cel.DynType), cel.Variable(varIndex, cel.IntType))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("expr: build the CEL environment: %w", err)
	}
	return env, nil
}

// library is what every environment has beyond its variables: the
// strings, math, lists and encoders extensions and optional types.
func library() []cel.EnvOption {
	return []cel.EnvOption{ext.Strings(), ext.Math(), ext.Lists(), ext.Encoders(), cel.OptionalTypes()}
}

func envFor(s Scope) (*cel.Env, error) {
	base, err := plainEnv()
	if s.ForEach {
		base, err = forEachEnv()
	}
	if err != nil || len(s.InputTypes) == 0 {
		return base, err
	}
	return typedEnv(base, s)
}

// Problem is why an expression cannot be compiled.
type Problem struct {
	// Path is the JSON path of the string that holds the expression, from
	// the document's root ("input.customer.name").
	Path string
	// Column is the 1-based position in the expression's source (between
	// its delimiters, trimmed) where the problem is, or 0 when it concerns
	// the whole expression.
	Column int
	// Message says what is wrong.
	Message string
}

func (p Problem) String() string {
	if p.Column > 0 {
		return fmt.Sprintf("%s: column %d: %s", p.Path, p.Column, p.Message)
	}
	return p.Path + ": " + p.Message
}

// ErrEval is wrapped by every evaluation error.
var ErrEval = errors.New("expr: evaluation failed")

// EvalError is why an input could not be resolved: which expression, and
// what went wrong (a missing key, a type error, the cost budget).
type EvalError struct {
	// Path is the JSON path of the string that holds the expression.
	Path string
	// Message says what went wrong.
	Message string
}

func (e *EvalError) Error() string { return e.Path + ": " + e.Message }

// Unwrap makes an *EvalError match ErrEval.
func (e *EvalError) Unwrap() error { return ErrEval }

// split returns the text pieces and expression sources of s: len(texts) ==
// len(sources)+1. ok is false when s holds no expression. An Open without a
// Close is a problem.
func split(s string) (texts, sources []string, problem string) {
	for {
		i := strings.Index(s, Open)
		if i < 0 {
			return append(texts, s), sources, ""
		}
		j := strings.Index(s[i+len(Open):], Close)
		if j < 0 {
			return nil, nil, "an expression opened with " + Open + " is not closed with " + Close
		}
		texts = append(texts, s[:i])
		sources = append(sources, strings.TrimSpace(s[i+len(Open):i+len(Open)+j]))
		s = s[i+len(Open)+j+len(Close):]
	}
}

// Contains reports whether s holds an expression opener.
func Contains(s string) bool { return strings.Contains(s, Open) }
