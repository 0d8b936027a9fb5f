package decide

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

const testRun = "0190a8e2-7b3c-7def-8123-456789abcdef"

// t0 is the time of the first round.
var t0 = time.Date(2026, 2, 11, 10, 0, 0, 0, time.UTC)

// later is a time when every timer of a test is due.
var later = t0.Add(time.Hour)

// bundle is one run under test: its plan, its log, the state folded from
// the log and the events reducer's snapshot of the same log.
type bundle struct {
	t    *testing.T
	p    *plan.Plan
	s    State
	log  []events.Event
	snap events.RunSnapshot
	now  time.Time
	// pp is p prepared, once for all its rounds, as the engine prepares
	// a run's plan.
	pp *Prepared
}

// setup validates a plan of copies of steps (planId "p", planVersion "v1")
// and returns a run whose log holds its RunApproved event. The copies keep
// ApplyDefaults from writing to steps that parallel tests share.
func setup(t *testing.T, steps ...plan.Step) *bundle {
	t.Helper()
	return setupWith(t, events.RunApprovedData{}, steps...)
}

// setupWith is setup with the approval's tenant, project, environment and
// input from approved.
func setupWith(t *testing.T, approved events.RunApprovedData, steps ...plan.Step) *bundle {
	t.Helper()
	steps = slices.Clone(steps)
	for i := range steps {
		if r := steps[i].Retry; r != nil {
			c := *r
			steps[i].Retry = &c
		}
	}
	p := &plan.Plan{PlanID: "p", PlanVersion: "v1", Steps: steps}
	require.NoError(t, p.Validate(plan.Limits{}))
	p.ApplyDefaults()
	b := &bundle{t: t, p: p, s: NewState(p), now: t0,
		snap: events.RunSnapshot{RunID: testRun, Status: events.RunStatusPending}}
	approved.PlanID, approved.PlanVersion = "p", "v1"
	b.append(events.Spec{RunID: testRun, Type: events.RunApproved, PlanVersion: "v1", Data: approved})
	return b
}

// act returns a step running activity "echo".
func act(id string, deps ...string) plan.Step {
	return plan.Step{ID: id, Activity: "echo", DependsOn: deps}
}

// wait returns a waitSignal step waiting for signal, with a timeout.
func wait(id, signal string, timeout time.Duration, deps ...string) plan.Step {
	return plan.Step{ID: id, Kind: plan.KindWaitSignal, Signal: signal, Timeout: plan.Duration(timeout), DependsOn: deps}
}

// withRetry sets a step's retry policy: max attempts, 1s initial backoff
// doubling up to a minute, no jitter, and non-retryable codes.
func withRetry(s plan.Step, maxAttempts int, initial time.Duration, nonRetryable ...string) plan.Step {
	s.Retry = &plan.RetryPolicy{MaxAttempts: maxAttempts, InitialBackoff: plan.Duration(initial),
		MaxBackoff: plan.Duration(time.Minute), Multiplier: 2, NonRetryableErrorCodes: nonRetryable}
	return s
}

// decide runs one round: it checks that Decide is pure (the same decision
// twice, the state untouched) and that folding the appended events gives
// Decide's working state, then appends the events to the log.
func (b *bundle) decide(in Input) Decision {
	b.t.Helper()
	in = b.stamp(in)
	if sa, ok := in.(SignalAccepted); ok {
		b.accepted(sa)
	}
	before := cloneState(b.s)
	d, working := decide(b.p, b.s, in)
	require.Equal(b.t, d, Decide(b.p, b.s, in), "Decide is deterministic")
	if b.pp == nil || b.pp.Plan != b.p {
		b.pp = Prepare(b.p)
	}
	require.Equal(b.t, d, b.pp.Decide(b.s, in), "a prepared plan decides the same")
	require.Equal(b.t, before, b.s, "Decide leaves its state alone")
	b.append(d.Events...)
	if len(d.Events) > 0 {
		working.Head = b.s.Head
		require.Equal(b.t, working, b.s, "folding the decision gives Decide's working state")
	}
	return d
}

// accepted appends the gateway's SignalAccepted event of sa to the log,
// once, as the gateway does before the engine sees the signal. A payload
// that is not JSON, which the gateway refuses, has no event: the cases
// that send one test the decider's own guard.
func (b *bundle) accepted(sa SignalAccepted) {
	b.t.Helper()
	if sa.SignalID == "" || (len(sa.Payload) > 0 && !json.Valid(sa.Payload)) ||
		slices.ContainsFunc(b.log, func(e events.Event) bool { return e.EventID == sa.EventID }) {
		return
	}
	e, err := events.New(events.Spec{RunID: testRun, Type: events.SignalAccepted, PlanVersion: b.p.PlanVersion, EmittedAt: b.now,
		LogicalAttemptID: "sig:" + sa.Name + ":" + sa.SignalID, // the gateway's storage key keeps keys apart
		Data:             events.SignalAcceptedData{SignalName: sa.Name, SignalID: sa.SignalID, Payload: sa.Payload}})
	require.NoError(b.t, err)
	e.EventID, e.RunSeq = sa.EventID, int64(len(b.log)+1)
	b.log = append(b.log, e)
	b.s, err = b.s.Apply(e)
	require.NoError(b.t, err)
	b.snap, err = events.ProjectIncremental(b.snap, []events.Event{e})
	require.NoError(b.t, err)
}

// stamp sets a zero Now to the bundle's clock and advances the clock to a
// later Now.
func (b *bundle) stamp(in Input) Input {
	switch v := in.(type) {
	case RunApproved:
		v.Now = b.tick(v.Now)
		return v
	case ResultStarted:
		v.Now = b.tick(v.Now)
		return v
	case ResultCompleted:
		v.Now = b.tick(v.Now)
		return v
	case ResultFailed:
		v.Now = b.tick(v.Now)
		return v
	case SignalAccepted:
		v.Now = b.tick(v.Now)
		return v
	case TimerFired:
		v.Now = b.tick(v.Now)
		return v
	case Resync:
		v.Now = b.tick(v.Now)
		return v
	case ChildEnded:
		v.Now = b.tick(v.Now)
		return v
	}
	return in
}

func (b *bundle) tick(at time.Time) time.Time {
	if at.IsZero() {
		return b.now
	}
	b.now = at
	return at
}

// append builds the events, gives them the next runSeqs, and folds them
// into the state and the reducer's snapshot, which must agree.
func (b *bundle) append(specs ...events.Spec) {
	b.t.Helper()
	var evs []events.Event
	for _, sp := range specs {
		e, err := events.New(sp)
		require.NoError(b.t, err)
		e.RunSeq = int64(len(b.log) + len(evs) + 1)
		evs = append(evs, e)
	}
	b.log = append(b.log, evs...)
	var err error
	b.s, err = b.s.Apply(evs...)
	require.NoError(b.t, err)
	b.snap, err = events.ProjectIncremental(b.snap, evs)
	require.NoError(b.t, err)
	requireAgrees(b.t, b.s, b.snap)
}

// requireAgrees asserts that the state and the reducer's snapshot agree on
// the run's status and on each step's status and logical attempt. A step
// the reducer shows CANCELLED (RunCancelled ended its attempt) is one the
// state keeps in flight, PENDING or RUNNING, in a CANCELLED run. A run the
// reducer shows QUEUED is one the state keeps APPROVED, and Queued.
func requireAgrees(t *testing.T, s State, snap events.RunSnapshot) {
	t.Helper()
	if snap.Status == events.RunStatusQueued {
		require.Equal(t, events.RunStatusApproved, s.Status)
		require.True(t, s.Queued, "the state knows the run is queued")
	} else {
		require.Equal(t, snap.Status, s.Status)
	}
	for _, st := range snap.Steps {
		state, _ := s.stepState(st.StepID)
		if st.Status == events.StepStatusCancelled {
			require.Equal(t, events.RunStatusCancelled, s.Status, "step %s", st.StepID)
			require.Contains(t, []events.StepStatus{events.StepStatusPending, events.StepStatusRunning},
				state.Status, "step %s", st.StepID)
		} else {
			require.Equal(t, st.Status, state.Status, "step %s", st.StepID)
		}
		require.Equal(t, st.LogicalAttemptID, fmt.Sprint(state.Attempt), "step %s", st.StepID)
	}
}

// cloneState deep-copies s's maps.
func cloneState(s State) State {
	s.Steps = maps.Clone(s.Steps)
	s.Signals = maps.Clone(s.Signals)
	s.Pending = slices.Clone(s.Pending)
	return s
}

// descs describes events as "Type step attempt" (fields left out when
// empty), so tests can compare decisions at a glance.
func descs(es []events.Spec) []string {
	out := []string{}
	for _, e := range es {
		s := string(e.Type)
		for _, f := range []string{e.StepID, e.LogicalAttemptID} {
			if f != "" {
				s += " " + f
			}
		}
		out = append(out, s)
	}
	return out
}

// taskIDs, timerIDs and cancelIDs describe a decision's other outputs as
// "step/attempt".
func taskIDs(d Decision) []string {
	out := []string{}
	for _, t := range d.Tasks {
		out = append(out, fmt.Sprintf("%s/%d", t.StepID, t.LogicalAttempt))
	}
	return out
}

func timerIDs(d Decision) []string {
	out := []string{}
	for _, t := range d.Timers {
		out = append(out, fmt.Sprintf("%s/%d %s", t.StepID, t.LogicalAttempt, t.Kind))
	}
	return out
}

func cancelIDs(d Decision) []string {
	out := []string{}
	for _, c := range d.Cancels {
		out = append(out, fmt.Sprintf("%s/%d", c.StepID, c.LogicalAttempt))
	}
	return out
}

// applied returns the payload of the decision's SignalApplied event.
func applied(t *testing.T, d Decision) events.SignalAppliedData {
	t.Helper()
	for _, e := range d.Events {
		if e.Type == events.SignalApplied {
			data, ok := e.Data.(events.SignalAppliedData)
			require.True(t, ok)
			return data
		}
	}
	require.Fail(t, "no SignalApplied event", "events: %v", descs(d.Events))
	return events.SignalAppliedData{}
}

// Input constructors; Now is left for the bundle to stamp.

func approve() Input { return RunApproved{} }

func start(step string, attempt int) Input {
	return ResultStarted{StepID: step, LogicalAttempt: attempt, EngineAttemptID: "1", WorkerID: "w1"}
}

func done(step string, attempt int) Input {
	return ResultCompleted{StepID: step, LogicalAttempt: attempt, EngineAttemptID: "1", Output: json.RawMessage(`{"ok":true}`)}
}

func fail(step string, attempt int, retryable bool) Input {
	return ResultFailed{StepID: step, LogicalAttempt: attempt, EngineAttemptID: "1",
		Error: events.StepError{Code: "BOOM", Message: "boom", Retryable: retryable}}
}

func fire(step string, attempt int, kind TimerKind) Input {
	return TimerFired{StepID: step, LogicalAttempt: attempt, Kind: kind, Now: later}
}

// sig returns a signal whose id is derived from n, so tests can repeat one.
func sig(n int, name, payload string) Input {
	in := SignalAccepted{SignalID: fmt.Sprintf("0190a8e2-0000-7000-8000-%012d", n), Name: name,
		EventID: fmt.Sprintf("0190a8e2-7b3c-7000-8000-%012d", n)}
	if payload != "" {
		in.Payload = json.RawMessage(payload)
	}
	return in
}

func retryStep(n int, step string) Input {
	return sig(n, plan.SignalRetryStep, `{"stepId":"`+step+`"}`)
}
