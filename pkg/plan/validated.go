package plan

import (
	"encoding/json"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validated is a plan that has been given its defaults and found valid
// against a set of limits, held as its JSON encoding, the persisted format
// (see the package doc). Holding one proves the validation ran: its fields
// are unexported, and only ParseValidated and Plan.Validated make one that
// is not the zero value, each after validating. It cannot change after it
// is made, so a caller that takes a Validated need not, and cannot,
// validate the plan again.
//
// The zero Validated holds no plan (IsZero). A Validated is safe for
// concurrent use.
type Validated struct {
	id, version string
	doc         json.RawMessage
	// lists are the forEach steps whose list is a path of the run's
	// input, which CheckInput checks.
	lists []inputList
	// schema is the plan's input schema compiled, nil for none, which
	// CheckInputSchema checks.
	schema *jsonschema.Schema
	// concurrency and inputTypes are the plan's concurrency limits and
	// the types its input schema declares, which RunKeys evaluates.
	concurrency []Concurrency
	fairness    *Fairness
	inputTypes  map[string]string
}

// Validated applies p's defaults (ApplyDefaults, in place, as Parse does)
// and validates p against limits (Validate), and returns it as a
// Validated, or a *ValidationError saying what is wrong. Later changes to
// p do not reach the Validated.
func (p *Plan) Validated(limits Limits) (Validated, error) {
	p.ApplyDefaults()
	c, err := p.validate(limits.withDefaults())
	if err != nil {
		return Validated{}, err
	}
	if c.encErr != nil {
		return Validated{}, fmt.Errorf("plan: encode: %w", c.encErr)
	}
	return Validated{id: p.PlanID, version: p.PlanVersion, doc: c.doc, lists: p.inputLists(limits.withDefaults()), schema: c.schema,
		concurrency: p.Concurrency, fairness: p.Fairness, inputTypes: p.inputTypes()}, nil
}

// IsZero reports whether v is the zero Validated, which holds no plan.
func (v Validated) IsZero() bool { return v.doc == nil }

// PlanID is the plan's planId.
func (v Validated) PlanID() string { return v.id }

// PlanVersion is the plan's planVersion.
func (v Validated) PlanVersion() string { return v.version }

// JSON is the plan's JSON encoding, as json.Marshal writes the plan with
// its defaults filled in: the form RunApproved persists. It is shared with
// v: the caller must not modify it.
func (v Validated) JSON() json.RawMessage { return v.doc }
