package plan

import (
	"bytes"
	"encoding/json"

	"github.com/weftrun/weft/pkg/plan/expr"
	"github.com/weftrun/weft/pkg/strictjson"
)

// What of a forEach step's list is checked before the run. Its bounds,
// MaxForEachElements and MaxForEachBytes, are checked by the engine when
// it evaluates the list; a list that is known before the run is held to
// them earlier, so that a run that could only fail there is not started:
//
//   - a list whose expression reads no variable ("[1, 2, 3]",
//     "lists.range(20000)") is the same in every run: Validate evaluates
//     it and refuses one over either bound (CodeForEachTooLarge);
//   - a list whose expression reads a path of the run's input and nothing
//     else ("input.orders", input["order-lines"]), on a step without an
//     If, is known once the input is: Validated.CheckInput counts its
//     elements at the start. A step with an If may be skipped by a
//     condition on that very input (size(input.orders) <= 10000), so its
//     list is left to the run.
//
// Any other list (one computed from the input, or read from the steps'
// outputs) exists only when the step is ready, and is bounded then.

// constantList adds the problem of step id's forEach list l (nil when it
// did not compile) when l reads no variable and is over a bound.
func constantList(ps *problems, id string, l *expr.List) {
	if l == nil {
		return
	}
	items, ok := l.Constant()
	if !ok {
		return
	}
	size := 2 + max(len(items)-1, 0) // the brackets and commas of the list the engine records
	for _, it := range items {
		size += len(it)
	}
	switch {
	case len(items) > MaxForEachElements:
		ps.add(id, "forEach", CodeForEachTooLarge, "the list reads no variable and has %d elements in every run, more than the limit of %d",
			len(items), MaxForEachElements)
	case size > MaxForEachBytes:
		ps.add(id, "forEach", CodeForEachTooLarge, "the list reads no variable and is %d bytes of JSON in every run, more than the limit of %d",
			size, MaxForEachBytes)
	}
}

// inputList is a forEach step whose list is the value at a path of the
// run's input.
type inputList struct {
	step string
	keys []string
}

// inputLists returns the forEach steps of p, valid against l, without an
// If, whose list is a path of the run's input, in declaration order.
func (p *Plan) inputLists(l Limits) []inputList {
	var out []inputList
	for i := range p.Steps {
		s := &p.Steps[i]
		if s.ForEach == "" || s.If != "" {
			continue
		}
		list, err := p.ForEachList(s.ID, expr.Limits{MaxExpressionBytes: l.MaxExpressionBytes})
		if err != nil || list == nil {
			continue
		}
		if keys, ok := list.InputPath(); ok {
			out = append(out, inputList{step: s.ID, keys: keys})
		}
	}
	return out
}

// CheckInput checks what of v's plan the run's input, input, decides
// before the run: the length of each forEach list whose expression is a
// path of the input and nothing else ("input.orders"), on a step without
// an If (a condition may skip the step on that very input). It returns
// nil or a *ValidationError with one CodeForEachTooLarge problem, field
// "forEach", for each such list of more than MaxForEachElements elements,
// in step order. An input that is empty, not JSON, or without a list at a
// path is not refused: a list that is absent, or not a list, fails its
// step when the engine evaluates it, and the input of a trigger's run is
// not known when the trigger is checked. The zero Validated accepts any
// input. Safe for concurrent use.
func (v Validated) CheckInput(input json.RawMessage) error {
	var ps problems
	for _, l := range v.lists {
		n, ok := listLen(input, l.keys)
		if ok && n > MaxForEachElements {
			path := "input"
			for _, k := range l.keys {
				path = strictjson.MemberPath(path, k, nil)
			}
			ps.add(l.step, "forEach", CodeForEachTooLarge, "%s has %d elements in the run's input, more than the limit of %d of a forEach list",
				path, n, MaxForEachElements)
		}
	}
	return ps.err()
}

// listLen returns the number of elements of the JSON array at the path
// keys of doc, and true; or 0 and false when there is none.
func listLen(doc json.RawMessage, keys []string) (int, bool) {
	for _, k := range keys {
		var obj map[string]json.RawMessage
		if json.Unmarshal(doc, &obj) != nil {
			return 0, false
		}
		var ok bool
		if doc, ok = obj[k]; !ok {
			return 0, false
		}
	}
	if !bytes.HasPrefix(bytes.TrimLeft(doc, " \t\r\n"), []byte("[")) {
		return 0, false
	}
	var elems []json.RawMessage
	if json.Unmarshal(doc, &elems) != nil {
		return 0, false
	}
	return len(elems), true
}
