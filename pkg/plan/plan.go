package plan

import (
	"encoding/json"
	"time"
)

// SchemaVersion is the newest plan schema version this code reads. Parse
// rejects a plan whose schemaVersion is higher. Version 2 reads the
// expressions of step inputs (SchemaVersionExpressions); version 3 holds
// an input schema, which types the expressions' input
// (SchemaVersionInputSchema); version 4 holds subPlan steps, which start
// child runs (SchemaVersionSubPlans); version 5 holds run concurrency
// limits (SchemaVersionFlowControl).
const SchemaVersion = 5

// Defaults applied by ApplyDefaults (and so by Parse) to activity steps.
const (
	DefaultQueue   = "default"
	DefaultTimeout = 5 * time.Minute
)

// Plan is a DAG of steps, each naming an activity or waiting for a signal.
//
// Its JSON encoding is a persisted format: it is stored inside RunApproved's
// eventData and read back for the life of the run, possibly by newer code.
// Field names and meanings never change within a SchemaVersion; additions
// that older readers would misread need a new SchemaVersion.
type Plan struct {
	// SchemaVersion is the version of this JSON shape. Zero means the
	// first version with what the plan uses: Parse and ApplyDefaults set it
	// to SchemaVersionExpressions when a step's input holds "${{", else 1.
	SchemaVersion int `json:"schemaVersion,omitempty"`
	// PlanID names the plan. Required; obeys the id rules (see Validate).
	PlanID string `json:"planId"`
	// PlanVersion names the plan's version; it is part of every event's
	// idempotency key. Required; obeys the id rules.
	PlanVersion string `json:"planVersion"`
	// Steps lists the steps. Their order is the declaration order that
	// breaks ties in TopoOrder and orders problems.
	Steps []Step `json:"steps"`
	// Output is the run's output: a CEL expression (docs/plans.md) over the
	// run's input and every step's results, evaluated when the run
	// completes and recorded on RunCompleted. Empty: no output. Schema
	// version 2.
	Output string `json:"output,omitempty"`
	// RunTimeout bounds the run, counted from its start (RunStarted): when
	// it passes, the run fails with RUN_TIMEOUT and its in-flight attempts
	// are asked to stop (docs/plans.md, "Timeouts"). Zero: no bound.
	// Schema version 2.
	RunTimeout Duration `json:"runTimeout,omitempty"`
	// InputSchema is the JSON Schema (2020-12, in the subset of
	// docs/plans.md "Input schema") the run's input must fit: a start
	// whose input does not is refused (Validated.CheckInputSchema), and
	// the expressions read the types it declares for the input's
	// properties. Empty: any input.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// Concurrency lists the plan's run concurrency limits, at most
	// MaxConcurrencyLimits: a run starts only when every one of them has
	// room for it (docs/flow-control.md). Schema version 5
	// (SchemaVersionFlowControl).
	Concurrency []Concurrency `json:"concurrency,omitempty"`
	// Fairness says how the queues of the plan's concurrency limits take
	// turns across the runs that wait in them; nil: across tenants, each
	// of weight 1 (docs/flow-control.md). Only with Concurrency. Schema
	// version 5.
	Fairness *Fairness `json:"fairness,omitempty"`
}

// Kind is the kind of a step.
type Kind string

// Step kinds.
const (
	// KindActivity runs the named activity on a worker. An empty Kind means
	// KindActivity.
	KindActivity Kind = "activity"
	// KindWaitSignal completes when a signal with the step's Signal name
	// arrives; the signal's payload is the step's output.
	KindWaitSignal Kind = "waitSignal"
	// KindSubPlan starts a child run of another plan, named by PlanRef or
	// carried inline in Plan, with the step's Input as the child's input;
	// the step ends with the child run: its output is the child's, and a
	// child that fails or is cancelled fails it (docs/plans.md, "Child
	// runs"). Schema version 4 (SchemaVersionSubPlans).
	KindSubPlan Kind = "subPlan"
)

// Step is one node of a plan.
type Step struct {
	// ID names the step within the plan; required, obeys the id rules.
	ID string `json:"id"`
	// Kind is KindActivity (the default when empty), KindWaitSignal or
	// KindSubPlan.
	Kind Kind `json:"kind,omitempty"`
	// Activity is the registered activity name. Required for activity
	// steps, not allowed on waitSignal steps.
	Activity string `json:"activity,omitempty"`
	// Signal is the name of the signal that completes a waitSignal step,
	// matched case-sensitively. Required for waitSignal steps; must not be a
	// control signal. Not allowed on activity steps.
	Signal string `json:"signal,omitempty"`
	// DependsOn lists the ids of the steps that must succeed first.
	DependsOn []string `json:"dependsOn,omitempty"`
	// Input is the activity's JSON input. It carries secret references
	// ({"secretRef": "<name>"}), never secret values. Not allowed on
	// waitSignal steps.
	Input json.RawMessage `json:"input,omitempty"`
	// Queue is the task queue, a NATS subject token. Zero means
	// DefaultQueue for activity steps; not allowed on waitSignal steps.
	Queue string `json:"queue,omitempty"`
	// Timeout bounds each attempt of an activity step; zero means
	// DefaultTimeout. On a waitSignal step it bounds the wait, and zero
	// waits indefinitely.
	Timeout Duration `json:"timeout,omitempty"`
	// Retry is the activity step's retry policy; nil means
	// DefaultRetryPolicy. Not allowed on waitSignal steps.
	Retry *RetryPolicy `json:"retry,omitempty"`
	// Secrets lists the secrets the activity may resolve. Not allowed on
	// waitSignal steps.
	Secrets []SecretRef `json:"secrets,omitempty"`
	// IdempotencyKey is an optional activity-level key for reconciling an
	// activity's side effect with its recorded result. Not allowed on
	// waitSignal steps.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// RunIf says which outcomes of its dependencies the step runs after:
	// RunIfAllSucceeded (empty: the default), RunIfAllDone or
	// RunIfAnyFailed (docs/plans.md). Schema version 2.
	RunIf RunIf `json:"runIf,omitempty"`
	// Handles lists the steps whose failure this RunIfAnyFailed step
	// handles: once it succeeds, their failure no longer fails the run.
	// Each must be an ancestor of the step. Schema version 2.
	Handles []string `json:"handles,omitempty"`
	// If is a condition, a CEL expression that yields a bool (docs/plans.md),
	// evaluated when the step is otherwise ready to run: false skips the
	// step (StepSkipped, reason CONDITION_FALSE), and the steps that depend
	// on it with it. Empty means always. Schema version 2.
	If string `json:"if,omitempty"`
	// ForEach makes an activity step a loop over data: a CEL expression
	// that yields a list, evaluated when the step is ready to run; the
	// activity runs once per element, with item and index in scope for the
	// input's expressions (docs/plans.md). Schema version 2.
	ForEach string `json:"forEach,omitempty"`
	// MaxParallel bounds how many elements of a ForEach step run at once;
	// zero means DefaultMaxParallel. Only with ForEach.
	MaxParallel int `json:"maxParallel,omitempty"`
	// FailFast says whether the first failed element of a ForEach step
	// stops it (nil: true): no more elements start, those running are
	// cancelled. False runs every element and fails the step at the end if
	// one failed. Only with ForEach.
	FailFast *bool `json:"failFast,omitempty"`
	// ScheduleToStartTimeout bounds how long each attempt of an activity
	// step may wait in its queue before a worker starts it: past it, the
	// attempt fails with SCHEDULE_TO_START_TIMEOUT and is retried under
	// Retry. Zero: no bound. Schema version 2; activity steps only.
	ScheduleToStartTimeout Duration `json:"scheduleToStartTimeout,omitempty"`
	// HeartbeatTimeout is the longest a started attempt of an activity step
	// may go without a heartbeat (worker.Input.Heartbeat), its start
	// counting as the first: past it, the attempt fails with
	// HEARTBEAT_TIMEOUT and is retried under Retry. Zero: no heartbeats
	// needed. Schema version 2; activity steps only.
	HeartbeatTimeout Duration `json:"heartbeatTimeout,omitempty"`
	// PlanRef names the registered plan version a subPlan step's child
	// runs ("latest": the newest not archived when the child starts).
	// A subPlan step has PlanRef or Plan, not both. SubPlan steps only.
	PlanRef *Ref `json:"planRef,omitempty"`
	// Plan is the plan a subPlan step's child runs, carried inline and
	// validated with the step's plan. SubPlan steps only.
	Plan *Plan `json:"plan,omitempty"`
	// ParentClose says what becomes of a subPlan step's child run that is
	// still running when its parent is cancelled or fails:
	// ParentCloseCancel (the default) cancels it, ParentCloseAbandon lets
	// it run on. SubPlan steps only.
	ParentClose ParentClose `json:"parentClose,omitempty"`
	// Labels are the labels of the child run a subPlan step starts, under
	// the limits of a start's labels (api.CheckLabels); a child carries
	// none of its parent's. SubPlan steps only.
	Labels map[string]string `json:"labels,omitempty"`
}

// SecretRef names a secret the worker resolves through a secrets provider
// when it runs the step. It is a reference, never a value.
type SecretRef struct {
	// Name is how the step refers to the secret, in {"secretRef": Name}
	// inside its input. Required; obeys the id rules.
	Name string `json:"name"`
	// Provider names the secrets provider ("env", "file", or another the
	// worker registers); empty means the worker's default.
	Provider string `json:"provider,omitempty"`
	// Key locates the secret within the provider, e.g. an environment
	// variable name or a file path. Required.
	Key string `json:"key"`
}

// Control signal names. They act on a run, so no waitSignal step may wait
// for them. Signal names are case-sensitive.
const (
	SignalPause     = "PAUSE"
	SignalResume    = "RESUME"
	SignalCancel    = "CANCEL"
	SignalRetryStep = "RETRY_STEP"
)

// IsControlSignal reports whether name is one of the control signals.
func IsControlSignal(name string) bool {
	switch name {
	case SignalPause, SignalResume, SignalCancel, SignalRetryStep:
		return true
	}
	return false
}

// EffectiveKind returns s.Kind, or KindActivity when it is empty.
func (s *Step) EffectiveKind() Kind {
	if s.Kind == "" {
		return KindActivity
	}
	return s.Kind
}

// ApplyDefaults fills in what a plan leaves to defaults: SchemaVersion (see
// the field), and
// for each activity step Kind, Queue, Timeout and Retry (nil becomes
// DefaultRetryPolicy; a RetryPolicy that is set is taken literally). It
// also normalises empty lists to nil, and Input and InputSchema to their
// compact JSON form
// (JSON null becomes nil), so that a plan survives a JSON round trip
// unchanged. Parse calls it; call it on plans built in Go before using them.
// It does not validate.
func (p *Plan) ApplyDefaults() {
	if p.SchemaVersion == 0 {
		p.SchemaVersion = p.schemaVersionFor()
	}
	p.InputSchema = compactInput(p.InputSchema)
	p.applyConcurrencyDefaults()
	for i := range p.Steps {
		p.Steps[i].applyDefaults()
	}
}

func (s *Step) applyDefaults() {
	s.DependsOn = nilIfEmpty(s.DependsOn)
	s.Handles = nilIfEmpty(s.Handles)
	s.Secrets = nilIfEmpty(s.Secrets)
	s.Input = compactInput(s.Input)
	if len(s.Labels) == 0 {
		s.Labels = nil
	}
	if s.Retry != nil {
		r := *s.Retry // a copy: plans built in Go may share one policy between steps
		r.NonRetryableErrorCodes = nilIfEmpty(r.NonRetryableErrorCodes)
		s.Retry = &r
	}
	if s.Kind == KindSubPlan {
		s.applySubPlanDefaults()
		return
	}
	if s.Kind != "" && s.Kind != KindActivity {
		return
	}
	s.Kind = KindActivity
	if s.Queue == "" {
		s.Queue = DefaultQueue
	}
	if s.Timeout == 0 {
		s.Timeout = Duration(DefaultTimeout)
	}
	if s.Retry == nil {
		r := DefaultRetryPolicy()
		s.Retry = &r
	}
}

// compactInput returns in as json.Marshal writes it (compact, with HTML
// characters escaped), nil for empty input or JSON null, and in unchanged
// when it is not valid JSON (Validate reports that).
func compactInput(in json.RawMessage) json.RawMessage {
	if len(in) == 0 || string(in) == "null" {
		return nil
	}
	out, err := json.Marshal(in)
	if err != nil {
		return in
	}
	if string(out) == "null" {
		return nil
	}
	return out
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// Step returns the first step with the given id. The pointer aliases
// p.Steps.
func (p *Plan) Step(id string) (*Step, bool) {
	for i := range p.Steps {
		if p.Steps[i].ID == id {
			return &p.Steps[i], true
		}
	}
	return nil, false
}

// Roots returns the ids of the steps with no dependencies, in declaration
// order. These are the steps a run starts with.
func (p *Plan) Roots() []string {
	var roots []string
	for i := range p.Steps {
		if len(p.Steps[i].DependsOn) == 0 {
			roots = append(roots, p.Steps[i].ID)
		}
	}
	return roots
}
