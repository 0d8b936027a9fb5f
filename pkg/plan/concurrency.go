package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/weftrun/weft/pkg/plan/expr"
)

// SchemaVersionFlowControl is the first plan schema version that holds
// run concurrency limits (Plan.Concurrency).
const SchemaVersionFlowControl = 5

// The bounds of a plan's concurrency limits.
const (
	// MaxConcurrencyLimits bounds how many limits one plan declares.
	MaxConcurrencyLimits = 4
	// MaxConcurrencyLimit bounds a limit's number of runs, as written or
	// as its expression yields it for a run.
	MaxConcurrencyLimit = 10_000
	// MaxConcurrencyKeyBytes bounds the value a limit's key, or a
	// fairness key, yields for a run.
	MaxConcurrencyKeyBytes = 256
	// MaxFairnessWeight bounds a fairness weight.
	MaxFairnessWeight = 100
)

// CodeInvalidConcurrency is a concurrency limit out of its bounds (no key, a
// limit of 0 or over MaxConcurrencyLimit, an unknown strategy, more than
// MaxConcurrencyLimits limits), or, for a run's input, a key that does not
// yield a string or a limit that does not yield an integer in bounds
// (Validated.RunKeys).
const CodeInvalidConcurrency = "INVALID_CONCURRENCY"

// ConcurrencyStrategy says what a limit does with a run that finds it
// full (docs/flow-control.md).
type ConcurrencyStrategy string

// The strategies.
const (
	// StrategyQueue queues the run until one of its key's runs ends. The
	// default.
	StrategyQueue ConcurrencyStrategy = "QUEUE"
	// StrategyCancelNewest cancels the new run: the runs holding the key
	// go on (Hatchet's CANCEL_NEWEST).
	StrategyCancelNewest ConcurrencyStrategy = "CANCEL_NEWEST"
	// StrategyCancelOldest cancels the key's oldest running run, and the
	// new run starts when it has ended (Hatchet's CANCEL_IN_PROGRESS).
	StrategyCancelOldest ConcurrencyStrategy = "CANCEL_OLDEST"
	// StrategyGroupRoundRobin shares one limit across every value of the
	// key: the queued runs start taking the values in turn, so one value's
	// backlog does not hold another's runs back.
	StrategyGroupRoundRobin ConcurrencyStrategy = "GROUP_ROUND_ROBIN"
)

// Concurrency is one run concurrency limit of a plan: at most Limit runs
// of the plan with the same Key value hold it at once, counted across
// every engine.
type Concurrency struct {
	// Key is a CEL expression over the run's input and run.* that yields a
	// string: runs with the same value share the limit ("input.customerId",
	// or "'all'" for one limit over every run of the plan).
	Key string `json:"key"`
	// Limit is how many runs of a key value may run at once: a number, or
	// an expression over the input that yields one, evaluated once, when
	// the run is submitted ("input.tier == 'premium' ? 10 : 1").
	Limit Count `json:"limit"`
	// Strategy is what a run that finds the limit full gets; empty is
	// StrategyQueue (ApplyDefaults fills it in).
	Strategy ConcurrencyStrategy `json:"strategy,omitempty"`
}

// Fairness is how a plan's queues take turns: within a priority, one
// visit to each value of Key in turn, each visit starting as many of its
// runs as its Weight, the runs of one value first come, first served. A
// tenant's backlog of 50,000 then delays another's run by one visit.
type Fairness struct {
	// Key is a CEL expression over the input and run.* that yields a
	// string; empty: run.tenantId.
	Key string `json:"key,omitempty"`
	// Weight is how many runs of the key's value a visit starts, 1 to
	// MaxFairnessWeight, or an expression that yields it; zero: 1.
	Weight Count `json:"weight,omitzero"`
}

// Count is a number of runs, written as a JSON number or as a string
// holding a CEL expression that yields one.
type Count struct {
	N    int
	Expr string
}

// MarshalJSON writes c as a number, or as the string of its expression.
func (c Count) MarshalJSON() ([]byte, error) {
	if c.Expr != "" {
		return json.Marshal(c.Expr)
	}
	return strconv.AppendInt(nil, int64(c.N), 10), nil
}

// UnmarshalJSON reads a whole number or a string holding an expression.
func (c *Count) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Count{Expr: s}
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 32)
	if err != nil {
		return fmt.Errorf("must be a whole number of runs, or a string holding an expression that yields one")
	}
	*c = Count{N: int(n)}
	return nil
}

// EffectiveStrategy is c's strategy, StrategyQueue when empty.
func (c Concurrency) EffectiveStrategy() ConcurrencyStrategy {
	if c.Strategy == "" {
		return StrategyQueue
	}
	return c.Strategy
}

func (p *Plan) applyConcurrencyDefaults() {
	if len(p.Concurrency) == 0 {
		p.Concurrency = nil
		return
	}
	for i := range p.Concurrency {
		p.Concurrency[i].Strategy = p.Concurrency[i].EffectiveStrategy()
	}
}

// concurrencyScope is what a concurrency limit's expressions may read:
// the run's input and run.*.
func (p *Plan) concurrencyScope() expr.Scope { return expr.Scope{InputTypes: p.inputTypes()} }

// concurrencies checks p's concurrency limits and adds their problems.
func (p *Plan) concurrencies(ps *problems, l Limits) {
	if len(p.Concurrency) == 0 {
		if p.Fairness != nil {
			ps.add("", "fairness", CodeFieldNotAllowed, "fairness orders the queues of concurrency limits, and the plan has none")
		}
		return
	}
	if p.SchemaVersion != 0 && p.SchemaVersion < SchemaVersionFlowControl {
		ps.add("", "concurrency", CodeFieldNotAllowed, "concurrency limits need schemaVersion %d", SchemaVersionFlowControl)
		return
	}
	if len(p.Concurrency) > MaxConcurrencyLimits {
		ps.add("", "concurrency", CodeInvalidConcurrency, "%d limits, more than the limit of %d", len(p.Concurrency), MaxConcurrencyLimits)
	}
	lim := expr.Limits{MaxExpressionBytes: l.MaxExpressionBytes}
	p.fairness(ps, lim)
	for i, c := range p.Concurrency {
		at := fmt.Sprintf("concurrency[%d]", i)
		if c.Key == "" {
			ps.add("", at+".key", CodeMissingField, "required: an expression that yields the run's key, such as input.customerId")
		} else {
			_, found := expr.CompileValue(c.Key, at+".key", p.concurrencyScope(), lim)
			addExpressionProblems(ps, "", found)
		}
		switch {
		case c.Limit.Expr != "":
			_, found := expr.CompileValue(c.Limit.Expr, at+".limit", p.concurrencyScope(), lim)
			addExpressionProblems(ps, "", found)
		case c.Limit.N < 1 || c.Limit.N > MaxConcurrencyLimit:
			ps.add("", at+".limit", CodeInvalidConcurrency, "%d runs; a limit is 1 to %d", c.Limit.N, MaxConcurrencyLimit)
		}
		switch c.Strategy {
		case "", StrategyQueue, StrategyCancelNewest, StrategyCancelOldest, StrategyGroupRoundRobin:
		default:
			ps.add("", at+".strategy", CodeInvalidConcurrency, "unknown strategy %s; want %s, %s, %s or %s", quote(string(c.Strategy)),
				StrategyQueue, StrategyCancelNewest, StrategyCancelOldest, StrategyGroupRoundRobin)
		}
	}
}

// fairness checks p's Fairness, of a plan with concurrency limits.
func (p *Plan) fairness(ps *problems, lim expr.Limits) {
	f := p.Fairness
	if f == nil {
		return
	}
	if f.Key != "" {
		_, found := expr.CompileValue(f.Key, "fairness.key", p.concurrencyScope(), lim)
		addExpressionProblems(ps, "", found)
	}
	switch {
	case f.Weight.Expr != "":
		_, found := expr.CompileValue(f.Weight.Expr, "fairness.weight", p.concurrencyScope(), lim)
		addExpressionProblems(ps, "", found)
	case f.Weight.N < 0 || f.Weight.N > MaxFairnessWeight:
		ps.add("", "fairness.weight", CodeInvalidConcurrency, "%d; a weight is 1 to %d", f.Weight.N, MaxFairnessWeight)
	}
}

// RunKey is one of a plan's concurrency limits as it applies to one run:
// the value its key yields for the run and the limit it yields.
type RunKey struct {
	// Index is the limit's place in Plan.Concurrency.
	Index    int
	Value    string
	Limit    int
	Strategy ConcurrencyStrategy
	// Group is the run's turn in the limit's queue: its value of the
	// plan's fairness key (its tenant by default) or, under
	// GROUP_ROUND_ROBIN, of the limit's key; Weight is the plan's
	// fairness weight for it (1 by default).
	Group  string
	Weight int
}

// RunKeys evaluates the plan's concurrency limits for a run that reads
// vars (its input and run.*). A key that does not yield a string of at
// most MaxConcurrencyKeyBytes, or a limit that does not yield a whole
// number from 1 to MaxConcurrencyLimit, is a problem with code
// CodeInvalidConcurrency at the limit's field ("concurrency[0].key"); so
// is an expression that fails. The zero Validated has none.
func (v Validated) RunKeys(vars expr.Vars) ([]RunKey, []Problem) {
	return runKeys(v.concurrency, v.fairness, v.inputTypes, vars)
}

// RunKeys is Validated.RunKeys of a plan that has passed Validate.
func (p *Plan) RunKeys(vars expr.Vars) ([]RunKey, []Problem) {
	return runKeys(p.Concurrency, p.Fairness, p.inputTypes(), vars)
}

func runKeys(cs []Concurrency, f *Fairness, types map[string]string, vars expr.Vars) ([]RunKey, []Problem) {
	if len(cs) == 0 {
		return nil, nil
	}
	scope := expr.Scope{InputTypes: types}
	var ps problems
	group, weight := fairnessOf(f, scope, vars, &ps)
	keys := make([]RunKey, 0, len(cs))
	for i, c := range cs {
		at := fmt.Sprintf("concurrency[%d]", i)
		k := RunKey{Index: i, Limit: c.Limit.N, Strategy: c.EffectiveStrategy(), Group: group, Weight: weight}
		var why string
		if k.Value, why = evalKey(c.Key, at+".key", scope, vars); why != "" {
			ps.add("", at+".key", CodeInvalidConcurrency, "%s", why)
		}
		if k.Strategy == StrategyGroupRoundRobin {
			k.Group = k.Value
		}
		if c.Limit.Expr != "" {
			if k.Limit, why = evalCount(c.Limit.Expr, at+".limit", scope, vars, MaxConcurrencyLimit); why != "" {
				ps.add("", at+".limit", CodeInvalidConcurrency, "%s", why)
			}
		}
		keys = append(keys, k)
	}
	if len(ps) > 0 {
		return nil, ps
	}
	return keys, nil
}

// fairnessOf evaluates f for a run: its group (its tenant when f has no
// key) and its weight (1 when f has none), adding to ps the problems.
func fairnessOf(f *Fairness, scope expr.Scope, vars expr.Vars, ps *problems) (string, int) {
	if f == nil {
		return vars.Run.TenantID, 1
	}
	group, weight := vars.Run.TenantID, max(f.Weight.N, 1)
	var why string
	if f.Key != "" {
		if group, why = evalKey(f.Key, "fairness.key", scope, vars); why != "" {
			ps.add("", "fairness.key", CodeInvalidConcurrency, "%s", why)
		}
	}
	if f.Weight.Expr != "" {
		if weight, why = evalCount(f.Weight.Expr, "fairness.weight", scope, vars, MaxFairnessWeight); why != "" {
			ps.add("", "fairness.weight", CodeInvalidConcurrency, "%s", why)
		}
	}
	return group, weight
}

// evalValue evaluates src, a limit's expression at path, and returns its
// JSON value, or why it has none.
func evalValue(src, path string, scope expr.Scope, vars expr.Vars) (json.RawMessage, string) {
	v, found := expr.CompileValue(src, path, scope, expr.Limits{})
	if len(found) > 0 {
		return nil, found[0].Message
	}
	doc, err := v.Eval(vars)
	if err != nil {
		return nil, err.Error()
	}
	return doc, ""
}

func evalKey(src, path string, scope expr.Scope, vars expr.Vars) (string, string) {
	doc, why := evalValue(src, path, scope, vars)
	if why != "" {
		return "", why
	}
	var s string
	if json.Unmarshal(doc, &s) != nil {
		return "", fmt.Sprintf("the key must yield a string; for this run it yields %s", kindOf(doc))
	}
	if len(s) > MaxConcurrencyKeyBytes || !utf8.ValidString(s) {
		return "", fmt.Sprintf("the key yields %d bytes; a key is valid UTF-8 of at most %d", len(s), MaxConcurrencyKeyBytes)
	}
	return s, ""
}

// evalCount evaluates src, a limit's or a weight's expression at path,
// which must yield a whole number from 1 to most.
func evalCount(src, path string, scope expr.Scope, vars expr.Vars, most int) (int, string) {
	doc, why := evalValue(src, path, scope, vars)
	if why != "" {
		return 0, why
	}
	n, err := strconv.ParseInt(string(doc), 10, 32)
	if err != nil {
		return 0, fmt.Sprintf("it must yield a whole number; for this run it yields %s", kindOf(doc))
	}
	if n < 1 || n > int64(most) {
		return 0, fmt.Sprintf("it yields %d; it must be 1 to %d", n, most)
	}
	return int(n), ""
}

// kindOf names the JSON type of doc for a message.
func kindOf(doc json.RawMessage) string {
	switch b := bytes.TrimSpace(doc); {
	case len(b) == 0 || b[0] == 'n':
		return "null"
	case b[0] == '"':
		return "a string"
	case b[0] == 't' || b[0] == 'f':
		return "a bool"
	case b[0] == '{':
		return "an object"
	case b[0] == '[':
		return "a list"
	default:
		return "the number " + string(b)
	}
}
