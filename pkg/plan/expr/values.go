package expr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// Vars are the values an expression reads. JSON documents are given as
// they are recorded; empty means absent (JSON null for Input and Item).
type Vars struct {
	// Input is the run's input document.
	Input json.RawMessage
	// Steps holds the results of the step's ancestors, by step id. The
	// caller passes ancestors only.
	Steps map[string]StepVars
	// Run identifies the run.
	Run RunVars
	// Item and Index are the element of a forEach step's list and its
	// position.
	Item  json.RawMessage
	Index int
}

// StepVars is what an expression reads of a step: steps.<id>.status,
// .output and .artifacts. Output and Artifacts are absent (reading them is
// an evaluation error) unless the step completed; then they are null and
// [] when empty.
type StepVars struct {
	Status    string
	Completed bool
	Output    json.RawMessage
	Artifacts json.RawMessage
}

// RunVars is run.<field>.
type RunVars struct {
	ID, PlanID, PlanVersion, TenantID, ProjectID, EnvironmentID string
}

// activation returns the variables as CEL reads them. The run's input and
// the steps' results are decoded only when an expression reads them (lazy
// bindings): a forEach element's input that reads only item does not
// decode its ancestors' outputs, up to 1 MiB each, once per element.
// The input's members of inputTypes (Scope.InputTypes) are bound as
// input.<name> (bindTyped), read from the same decoding of the input. An
// activation is for one goroutine.
func (v Vars) activation(inputTypes map[string]string) (map[string]any, error) {
	item, err := fromJSON(v.Item)
	if err != nil {
		return nil, fmt.Errorf("expr: the forEach item: %w", err)
	}
	decodeInput := lazy(func() (any, error) {
		input, err := fromJSON(v.Input)
		if err != nil {
			return nil, fmt.Errorf("expr: the run input: %w", err)
		}
		return input, nil
	})
	var decoded ref.Val
	input := func() ref.Val {
		if decoded == nil {
			decoded = decodeInput()
		}
		return decoded
	}
	r := v.Run
	act := map[string]any{
		varInput: input,
		varSteps: lazy(v.steps), varItem: item, varIndex: int64(v.Index),
		varRun: map[string]string{"id": r.ID, "planId": r.PlanID, "planVersion": r.PlanVersion,
			"tenantId": r.TenantID, "projectId": r.ProjectID, "environmentId": r.EnvironmentID},
	}
	bindTyped(act, inputTypes, input)
	return act, nil
}

// steps returns the steps' results as CEL reads them.
func (v Vars) steps() (any, error) {
	steps := make(map[string]any, len(v.Steps))
	for id, s := range v.Steps {
		m := map[string]any{"status": s.Status}
		if s.Completed {
			var err error
			if m["output"], err = fromJSON(s.Output); err != nil {
				return nil, fmt.Errorf("expr: the output of step %q: %w", id, err)
			}
			if m["artifacts"], err = fromJSON(s.Artifacts); err != nil {
				return nil, fmt.Errorf("expr: the artifacts of step %q: %w", id, err)
			}
			if m["artifacts"] == nil {
				m["artifacts"] = []any{}
			}
		}
		steps[id] = m
	}
	return steps, nil
}

// lazy is a binding CEL resolves when an expression first reads it (the
// activation keeps the value): decode's value, or its error as CEL's.
func lazy(decode func() (any, error)) func() ref.Val {
	return func() ref.Val {
		v, err := decode()
		if err != nil {
			return types.NewErrFromString(err.Error())
		}
		return types.DefaultTypeAdapter.NativeToValue(v)
	}
}

// fromJSON decodes a document for CEL: whole numbers that fit become
// ints, so input.count + 1 type-checks as CEL's ints do; other numbers
// become doubles. Empty is null.
func fromJSON(doc json.RawMessage) (any, error) {
	if len(doc) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return numbers(v), nil
}

func numbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return i
		}
		f, _ := t.Float64() // valid JSON: at worst ±Inf for an overflow, refused on the way out
		return f
	case []any:
		for i, e := range t {
			t[i] = numbers(e)
		}
	case map[string]any:
		for k, e := range t {
			t[k] = numbers(e)
		}
	}
	return v
}

// errNUL refuses a string or key holding U+0000: JSON can write it, but
// the event log's jsonb cannot hold it, and a value is written there.
var errNUL = errors.New(`a string holding U+0000 (\x00) has no JSON form the event log can store`)

// toJSON converts a CEL value into what encoding/json writes as its JSON
// value. Maps must have string keys; bytes become base64 strings, as
// encoding/json writes them; strings holding U+0000 are refused (errNUL),
// and so are timestamps and durations (no expression can make one from the
// clock, but string(...) states the format wanted).
func toJSON(v ref.Val) (any, error) {
	switch t := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(t), nil
	case types.Int:
		return int64(t), nil
	case types.Uint:
		return uint64(t), nil
	case types.Double:
		if math.IsNaN(float64(t)) || math.IsInf(float64(t), 0) {
			return nil, fmt.Errorf("the value %v has no JSON form", float64(t))
		}
		return float64(t), nil
	case types.String:
		if strings.IndexByte(string(t), 0) >= 0 {
			return nil, errNUL
		}
		return string(t), nil
	case types.Bytes:
		return []byte(t), nil
	case traits.Mapper:
		return mapToJSON(t)
	case traits.Lister:
		return listToJSON(t)
	default:
		return nil, fmt.Errorf("a value of type %s has no JSON form", v.Type().TypeName())
	}
}

func listToJSON(l traits.Lister) (any, error) {
	n, ok := l.Size().(types.Int)
	if !ok {
		return nil, errors.New("a list of unknown size")
	}
	out := make([]any, int(n))
	for i := range out {
		var err error
		if out[i], err = toJSON(l.Get(types.Int(i))); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func mapToJSON(m traits.Mapper) (any, error) {
	out := map[string]any{}
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		key, ok := k.(types.String)
		if !ok {
			return nil, fmt.Errorf("a map key of type %s: JSON object keys are strings", k.Type().TypeName())
		}
		if strings.IndexByte(string(key), 0) >= 0 {
			return nil, errNUL
		}
		v, err := toJSON(m.Get(k))
		if err != nil {
			return nil, err
		}
		out[string(key)] = v
	}
	return out, nil
}

// interpolate renders a scalar for text.
func interpolate(v any) (string, error) {
	switch t := v.(type) {
	case string:
		return t, nil
	case bool:
		return strconv.FormatBool(t), nil
	case int64:
		return strconv.FormatInt(t, 10), nil
	case uint64:
		return strconv.FormatUint(t, 10), nil
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64), nil
	default:
		return "", fmt.Errorf("an expression inside text must yield a string, number or bool, not %T", v)
	}
}
