package plan

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxSecretKeyBytes bounds SecretRef.Key, which may be a file path.
const maxSecretKeyBytes = 1024

// Validate checks p against the plan rules and limits (zero fields of
// limits mean their defaults) and returns nil or a *ValidationError listing
// every problem, each with a Code… constant and, where it concerns a step,
// the step's id. It reports:
//
//   - the plan: schemaVersion newer than SchemaVersion, missing or invalid
//     planId and planVersion, no steps, more than MaxSteps steps, a JSON
//     encoding longer than MaxPlanBytes, an inputSchema over
//     MaxInputSchemaBytes or that does not compile within the supported
//     subset (CodeInvalidInputSchema);
//   - each step, in declaration order: a missing, invalid or duplicate id,
//     an unknown kind, the kind's required fields missing or fields of the
//     other kind present, an invalid activity, queue or signal name, a
//     negative timeout, a retry policy out of bounds, invalid or duplicate
//     secrets, an input that is not JSON, longer than MaxStepInputBytes, or
//     that carries what looks like a secret value (see IsSecretKey and
//     SecretShape), and unknown, duplicate or self dependencies;
//   - every dependency cycle, with its path;
//   - in a plan without cycles, each expression that does not compile
//     (reading input.<name> as the type inputSchema declares, if it
//     does), including one that reads no variable and costs more than
//     expr.DefaultCostBudget (CodeInvalidExpression), and each forEach
//     list that reads no variable and has more than MaxForEachElements
//     elements or more than MaxForEachBytes of JSON (CodeForEachTooLarge).
//     What the run's input decides is checked by Validated.CheckInput.
//
// Ids (planId, planVersion, step ids, secret names) and queue and signal
// names obey the id rules: non-empty, at most MaxIDBytes bytes, valid
// UTF-8, no whitespace, control or format characters, none of '.', '*' and
// '>', no leading '$', because they become NATS subject tokens and parts of
// keys. Activity names, secret providers and idempotency keys obey the same
// rules except the last two.
//
// Zero fields that ApplyDefaults would fill (Kind, Queue, Timeout, Retry,
// SchemaVersion) are valid. Validate does not modify p. Cycles are not
// searched for in a plan with more than MaxSteps steps.
func (p *Plan) Validate(limits Limits) error {
	_, err := p.validate(limits.withDefaults())
	return err
}

// checked is what validate made on the way: p's JSON encoding, which the
// size check made, or json.Marshal's error, and its input schema
// compiled (nil for none).
type checked struct {
	doc    []byte
	encErr error
	schema *jsonschema.Schema
}

// validate is Validate with the limits l, defaults filled in.
func (p *Plan) validate(l Limits) (checked, error) { return p.validateAt(l, 0) }

// validateAt is validate of a plan at child-run depth depth (stepValidator).
func (p *Plan) validateAt(l Limits, depth int) (checked, error) {
	var ps problems
	var c checked
	c.doc, c.encErr = p.validateHeader(&ps, l)
	c.schema = p.inputSchema(&ps, l)
	first := make(map[string]int, len(p.Steps))
	for i := range p.Steps {
		if _, dup := first[p.Steps[i].ID]; !dup {
			first[p.Steps[i].ID] = i
		}
	}
	for i := range p.Steps {
		v := stepValidator{ps: &ps, step: &p.Steps[i], index: i, limits: l, depth: depth}
		v.validate(first)
	}
	p.timeouts(&ps)
	p.subPlanVersion(&ps)
	p.concurrencies(&ps, l)
	if len(p.Steps) <= l.MaxSteps {
		cycles := newGraph(p).cycles()
		for _, c := range cycles {
			ps.add(c[0], "dependsOn", CodeCycle, "dependency cycle: %s (each step depends on the next)", formatCycle(c))
		}
		if len(cycles) == 0 {
			p.expressions(&ps, l)
			p.runIfs(&ps)
			p.forEaches(&ps)
		}
	}
	return c, ps.err()
}

// validateHeader checks the plan's own fields and size, and returns its
// JSON encoding or json.Marshal's error.
func (p *Plan) validateHeader(ps *problems, l Limits) ([]byte, error) {
	if p.SchemaVersion < 0 || p.SchemaVersion > SchemaVersion {
		ps.add("", "schemaVersion", CodeUnsupportedSchemaVersion,
			"version %d is not supported; this code reads versions 1 to %d", p.SchemaVersion, SchemaVersion)
	}
	checkID(ps, "planId", p.PlanID, l.MaxIDBytes)
	checkID(ps, "planVersion", p.PlanVersion, l.MaxIDBytes)
	switch {
	case len(p.Steps) == 0:
		ps.add("", "steps", CodeEmptyPlan, "a plan needs at least one step")
	case len(p.Steps) > l.MaxSteps:
		ps.add("", "steps", CodeTooManySteps, "%d steps, more than the limit of %d", len(p.Steps), l.MaxSteps)
	}
	b, err := json.Marshal(p)
	if err == nil && len(b) > l.MaxPlanBytes {
		ps.add("", "", CodePlanTooLarge, "the plan encodes to %d bytes of JSON, more than the limit of %d", len(b), l.MaxPlanBytes)
	}
	return b, err
}

func checkID(ps *problems, field, id string, maxBytes int) {
	if id == "" {
		ps.add("", field, CodeMissingField, "required")
		return
	}
	if why := idProblem(id, maxBytes); why != "" {
		ps.add("", field, CodeInvalidID, "%s %s", quote(id), why)
	}
}

// stepValidator checks one step and records its problems under its id, or
// under its index when it has no id.
type stepValidator struct {
	ps     *problems
	step   *Step
	index  int
	limits Limits
	// depth is the child-run depth of the step's plan: 0 for the plan a
	// run is started with, 1 for a subPlan step's inline plan, and so on.
	depth int
}

func (v *stepValidator) add(field, code, format string, args ...any) {
	if v.step.ID != "" {
		v.ps.add(v.step.ID, field, code, format, args...)
		return
	}
	path := fmt.Sprintf("steps[%d]", v.index)
	if field != "" {
		path += "." + field
	}
	v.ps.add("", path, code, format, args...)
}

func (v *stepValidator) validate(first map[string]int) {
	s := v.step
	switch {
	case s.ID == "":
		v.add("id", CodeMissingField, "required")
	case idProblem(s.ID, v.limits.MaxIDBytes) != "":
		v.add("id", CodeInvalidID, "%s", idProblem(s.ID, v.limits.MaxIDBytes))
	case first[s.ID] != v.index:
		v.add("id", CodeDuplicateStepID, "duplicate step id: steps[%d] and steps[%d] both use it", first[s.ID], v.index)
	}
	switch s.EffectiveKind() {
	case KindActivity:
		v.activity()
	case KindWaitSignal:
		v.waitSignal()
	case KindSubPlan:
		v.subPlan()
	default:
		v.add("kind", CodeInvalidKind, "unknown kind %s; want %q, %q or %q", quote(string(s.Kind)), KindActivity, KindWaitSignal, KindSubPlan)
	}
	if s.Timeout < 0 {
		v.add("timeout", CodeInvalidTimeout, "must not be negative")
	}
	v.dependencies(first)
}

func (v *stepValidator) activity() {
	s := v.step
	if s.Activity == "" {
		v.add("activity", CodeMissingField, "required for an activity step")
	} else if why := nameProblem(s.Activity, v.limits.MaxIDBytes); why != "" {
		v.add("activity", CodeInvalidName, "%s", why)
	}
	if s.Signal != "" {
		v.add("signal", CodeFieldNotAllowed, "only waitSignal steps have a signal")
	}
	if s.Queue != "" {
		if why := idProblem(s.Queue, v.limits.MaxIDBytes); why != "" {
			v.add("queue", CodeInvalidQueue, "%s", why)
		}
	}
	if s.Retry != nil {
		v.retry(s.Retry)
	}
	if s.IdempotencyKey != "" {
		if why := nameProblem(s.IdempotencyKey, v.limits.MaxIDBytes); why != "" {
			v.add("idempotencyKey", CodeInvalidName, "%s", why)
		}
	}
	v.secrets()
	v.input()
	v.noSubPlanFields()
}

func (v *stepValidator) waitSignal() {
	s := v.step
	switch {
	case s.Signal == "":
		v.add("signal", CodeMissingField, "required for a waitSignal step")
	case IsControlSignal(s.Signal):
		v.add("signal", CodeInvalidSignal, "%q is a control signal and cannot complete a step", s.Signal)
	case idProblem(s.Signal, v.limits.MaxIDBytes) != "":
		v.add("signal", CodeInvalidSignal, "%s", idProblem(s.Signal, v.limits.MaxIDBytes))
	}
	v.notAllowed("a waitSignal step runs no activity", []setField{
		{"activity", s.Activity != ""},
		{"queue", s.Queue != ""},
		{"retry", s.Retry != nil},
		{"secrets", len(s.Secrets) > 0},
		{"input", len(s.Input) > 0},
		{"idempotencyKey", s.IdempotencyKey != ""},
	})
	v.noSubPlanFields()
}

// setField is a field of a step, and whether the step sets it.
type setField struct {
	name string
	set  bool
}

// notAllowed refuses each field of fields the step sets, which its kind
// does not take: why says why ("a waitSignal step runs no activity").
func (v *stepValidator) notAllowed(why string, fields []setField) {
	for _, f := range fields {
		if f.set {
			v.add(f.name, CodeFieldNotAllowed, "%s, so it takes no %s", why, f.name)
		}
	}
}

func (v *stepValidator) retry(r *RetryPolicy) {
	if r.MaxAttempts < 1 {
		v.add("retry.maxAttempts", CodeInvalidRetry, "must be at least 1, got %d", r.MaxAttempts)
	}
	if r.InitialBackoff < 0 {
		v.add("retry.initialBackoff", CodeInvalidRetry, "must not be negative")
	}
	if r.MaxBackoff <= 0 {
		v.add("retry.maxBackoff", CodeInvalidRetry, "must be positive")
	} else if r.MaxBackoff < r.InitialBackoff {
		v.add("retry.maxBackoff", CodeInvalidRetry, "%s is less than initialBackoff %s", r.MaxBackoff, r.InitialBackoff)
	}
	if math.IsNaN(r.Multiplier) || math.IsInf(r.Multiplier, 0) || r.Multiplier < 1 {
		v.add("retry.multiplier", CodeInvalidRetry, "must be a finite number of at least 1, got %v", r.Multiplier)
	}
	if math.IsNaN(r.Jitter) || r.Jitter < 0 || r.Jitter > 1 {
		v.add("retry.jitter", CodeInvalidRetry, "must be between 0 and 1, got %v", r.Jitter)
	}
	for i, code := range r.NonRetryableErrorCodes {
		if why := nameProblem(code, v.limits.MaxIDBytes); why != "" {
			v.add(fmt.Sprintf("retry.nonRetryableErrorCodes[%d]", i), CodeInvalidRetry, "%s", why)
		}
	}
}

func (v *stepValidator) secrets() {
	seen := make(map[string]bool, len(v.step.Secrets))
	for i, sr := range v.step.Secrets {
		field := fmt.Sprintf("secrets[%d]", i)
		switch {
		case sr.Name == "":
			v.add(field+".name", CodeMissingField, "required")
		case idProblem(sr.Name, v.limits.MaxIDBytes) != "":
			v.add(field+".name", CodeInvalidID, "%s", idProblem(sr.Name, v.limits.MaxIDBytes))
		case seen[sr.Name]:
			v.add(field+".name", CodeDuplicateSecret, "secret %s is declared twice", quote(sr.Name))
		}
		seen[sr.Name] = true
		if sr.Provider != "" {
			if why := idProblem(sr.Provider, v.limits.MaxIDBytes); why != "" {
				v.add(field+".provider", CodeInvalidName, "%s", why)
			}
		}
		switch {
		case sr.Key == "":
			v.add(field+".key", CodeMissingField, "required")
		case secretKeyProblem(sr.Key) != "":
			v.add(field+".key", CodeInvalidName, "%s", secretKeyProblem(sr.Key))
		default:
			if kind, ok := SecretShape(sr.Key); ok {
				v.add(field+".key", CodeSecretValue, "looks like %s; a key names where the secret is, not the secret", kind)
			}
		}
	}
}

func (v *stepValidator) input() {
	in := v.step.Input
	if len(in) == 0 {
		return
	}
	if !json.Valid(in) {
		v.add("input", CodeInvalidInput, "not valid JSON")
		return
	}
	if n := len(compactInput(in)); n > v.limits.MaxStepInputBytes {
		v.add("input", CodeInputTooLarge, "%d bytes of JSON, more than the limit of %d", n, v.limits.MaxStepInputBytes)
	}
	declared := make(map[string]bool, len(v.step.Secrets))
	for _, sr := range v.step.Secrets {
		declared[sr.Name] = true
	}
	for _, f := range scanInput(in, declared) {
		v.add(f.path, f.code, "%s", f.message)
	}
}

func (v *stepValidator) dependencies(first map[string]int) {
	seen := make(map[string]bool, len(v.step.DependsOn))
	for _, dep := range v.step.DependsOn {
		_, known := first[dep]
		switch {
		case dep == "":
			v.add("dependsOn", CodeUnknownDependency, "empty step id")
		case dep == v.step.ID:
			v.add("dependsOn", CodeSelfDependency, "the step depends on itself")
		case seen[dep]:
			v.add("dependsOn", CodeDuplicateDependency, "step %s is listed twice", quote(dep))
		case !known:
			v.add("dependsOn", CodeUnknownDependency, "unknown step %s", quote(dep))
		}
		seen[dep] = true
	}
}
