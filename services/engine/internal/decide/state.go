package decide

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// State is the engine's view of one run, folded from its events in runSeq
// order. It is a value: Apply and Decide return new states and never
// modify the maps of the State they are given.
type State struct {
	// RunID is the run's id, taken from its first event.
	RunID string
	// Status is the run's status, PENDING before RunApproved. Terminal
	// statuses are absorbing, as in the events reducer.
	Status events.RunStatus
	// Head is the runSeq of the last event applied: the expected head of
	// the round's compare-and-swap.
	Head int64
	// Steps holds every step of the plan by id.
	Steps map[string]StepState
	// Signals holds the signals a SignalApplied event records. A signal is
	// identified by its name and id together, as the gateway scopes its
	// idempotency (tier0 contract, "Signal Idempotency").
	Signals map[SignalRef]bool
	// Pauses, Resumes, Failures and SignalsApplied count RunPaused,
	// RunResumed, RunFailed and SignalApplied events: their next occurrence
	// numbers are one more. (A run fails again after RETRY_STEP reopened
	// it and the step failed again.)
	Pauses, Resumes, Failures, SignalsApplied int
	// Queued reports that the run was queued (RunQueued) and not started.
	Queued bool
	// DelayedUntil is when a run started under DELAY may dispatch; zero:
	// at once.
	DelayedUntil time.Time
	// Pending lists the signals accepted (SignalAccepted) and not yet
	// applied, in acceptance order: what a Resync applies when the bus lost
	// their SignalAccepted messages.
	Pending []SignalAccepted
	// Buffered lists the signals kept for a waitSignal step that did not
	// wait yet (SignalApplied, outcome buffered), in acceptance order, with
	// their payloads: the next step to wait for a signal of its name takes
	// the first one.
	Buffered []SignalAccepted
	// Run is what RunApproved says of the run that expressions read.
	Run RunInfo
	// Elements holds the states of the elements of forEach steps, by
	// step; nil when there is none. An element keeps its state across its
	// step's attempts (RETRY_STEP runs only the elements that did not
	// succeed). A checkpoint records them as steps, under their child
	// step ids (events.ChildStepID).
	Elements map[string]Elements
	// Fans holds the fan-out of each forEach step whose current attempt
	// is scheduled; nil when there is none. Derived: a checkpoint does not
	// record it.
	Fans map[string]Fan
	// ChildEnds lists the ChildRunEnded events of subPlan attempts in
	// flight, in log order: what the run's next round ends the steps
	// with (subruns.go). Nil when there is none.
	ChildEnds []ChildEnded
}

// RunInfo is the identity and input of a run, from its RunApproved.
type RunInfo struct {
	TenantID, ProjectID, EnvironmentID, PlanID string
	// Priority is the run's admission priority (zero:
	// api.DefaultPriority): its place in a queue.
	Priority int
	// Input is the run's input, as compact JSON text; empty for none.
	Input string
	// StartedAt is when the run started (RunStarted's emittedAt), or was
	// last reopened by RETRY_STEP (RunResumed's), from which its plan's
	// runTimeout counts; zero before.
	StartedAt time.Time
	// Parent is, for a child run, the subPlan step of its parent that
	// started it; zero for a run a caller started.
	Parent events.RunParent
	// Rerun is, for a rerun, its source and the outcomes its start copies
	// (rerun.go); nil otherwise.
	Rerun *events.RerunOf
}

// StepState is one step as of its current logical attempt.
type StepState struct {
	// Status follows the events reducer: PENDING until StepStarted, RUNNING,
	// then the attempt's outcome.
	Status events.StepStatus
	// Attempt is the current logical attempt, from 1.
	Attempt int
	// Scheduled reports that Attempt has been dispatched (StepScheduled).
	Scheduled bool
	// EngineAttemptID is the platform attempt of the last result recorded.
	EngineAttemptID string
	// RetryAt, when set on an attempt not yet scheduled, is the earliest
	// time it may be scheduled: a policy retry's timer, or the time
	// RETRY_STEP brought the step back.
	RetryAt time.Time
	// SeriesStart is the first attempt the retry policy counts: 1, or the
	// attempt a RETRY_STEP started, which gets a fresh budget.
	SeriesStart int
	// Deadline is when a waiting waitSignal step times out; zero: never.
	Deadline time.Time
	// Error is why Attempt failed (FAILED), or, until the attempt starts,
	// why the previous one did.
	Error events.StepError
	// ScheduledAt and StartedAt are when Attempt was scheduled and started
	// (the events' emittedAt: the engine's round time); zero until then.
	ScheduledAt, StartedAt time.Time
	// ActivityKey is the activity-level idempotency key the worker of
	// Attempt reported in its StepStarted, for a keyed attempt; empty
	// otherwise.
	ActivityKey string
	// Input is the resolved input Attempt was dispatched with, as compact
	// JSON text, when the step's input holds expressions (StepScheduled
	// records it); empty otherwise.
	Input string
	// Output and Artifacts are what the attempt produced, as compact JSON
	// text, once it completed; empty otherwise. Expressions of the steps
	// after it read them.
	Output, Artifacts string
	// SkippedByCondition is, for a step skipped because a condition was
	// false, the step whose condition it was; empty otherwise.
	SkippedByCondition string
	// ChildRunID is the child run Attempt of a subPlan step started
	// (StepScheduled records it); empty otherwise.
	ChildRunID string
}

// InFlight reports whether the attempt is dispatched and has no outcome.
func (st StepState) InFlight() bool { return st.Scheduled && !st.Status.Terminal() }

// errSeq is the cause given for an event whose runSeq is not assigned.
var errSeq = errors.New("runSeq is not assigned (must be at least 1)")

// NewState returns the state of a run of p before any event: PENDING, and
// every step PENDING at logical attempt 1.
func NewState(p *plan.Plan) State {
	s := State{
		Status:  events.RunStatusPending,
		Steps:   make(map[string]StepState, len(p.Steps)),
		Signals: map[SignalRef]bool{},
	}
	for i := range p.Steps {
		s.Steps[p.Steps[i].ID] = StepState{Status: events.StepStatusPending, Attempt: 1, SeriesStart: 1}
	}
	return s
}

// Fold returns the state of a run of p after evs, which must be the run's
// events from runSeq 1 in order; see Apply.
func Fold(p *plan.Plan, evs []events.Event) (State, error) {
	return NewState(p).Apply(evs...)
}

// Apply returns s after evs, in increasing runSeq order. Events at or below
// Head are duplicates and skipped. It stops at the first event of another
// run (events.ErrWrongRun), with a runSeq below 1, past a gap
// (*events.GapError), or whose payload does not decode
// (*events.MalformedEventError), and returns the state as of the last event
// applied with the error. Event types the engine does not read, step
// events of steps the plan does not have, and step events without a
// decimal logicalAttemptId change nothing but Head.
func (s State) Apply(evs ...events.Event) (State, error) {
	return s.applyAll(evs, nil)
}

// ApplyDecided returns s after evs, the events of d, a decision Decide
// made on s: evs[i] is d.Events[i] as events.New built it, with the runSeq
// and the emittedAt the log stores. It is s.Apply(evs...) without decoding
// the payloads it just encoded: it reads each payload from d.Events[i].Data,
// the value evs[i].EventData was encoded from, and everything else from
// evs[i]. It returns the state Apply returns, but for the text of the JSON
// documents the state keeps (outputs, resolved inputs): Apply's is the
// text of the encoding, which escapes <, > and &, ApplyDecided's the text
// the decision carries. They are the same documents, as are those of a
// fold of the log read back, whose jsonb rewrites their text. Apply's
// checks apply; an event that is not its spec's (another type, step or
// attempt) is an error.
func (s State) ApplyDecided(d Decision, evs []events.Event) (State, error) {
	if len(evs) != len(d.Events) {
		return s, fmt.Errorf("decide: %d events for a decision of %d", len(evs), len(d.Events))
	}
	return s.applyAll(evs, d.Events)
}

// applyAll is Apply, with the payload of evs[i] read from specs[i] when
// specs is not nil (ApplyDecided).
func (s State) applyAll(evs []events.Event, specs []events.Spec) (State, error) {
	s = s.clone()
	for i, e := range evs {
		switch {
		case s.RunID != "" && e.RunID != s.RunID:
			return s, fmt.Errorf("%w: %s event at runSeq %d is for run %q, state is for run %q",
				events.ErrWrongRun, e.EventType, e.RunSeq, e.RunID, s.RunID)
		case e.RunSeq < 1:
			return s, &events.MalformedEventError{RunID: e.RunID, RunSeq: e.RunSeq, Type: e.EventType, Err: errSeq}
		case e.RunSeq <= s.Head:
			continue
		case events.DetectGap(s.Head, e.RunSeq):
			return s, &events.GapError{RunID: e.RunID, LastEventSeq: s.Head, NextSeq: e.RunSeq}
		}
		var f fact
		var err error
		if specs != nil {
			f, err = factOfDecided(e, specs[i])
		} else {
			f, err = factOf(e)
		}
		if err != nil {
			return s, err
		}
		s.RunID = e.RunID
		s.apply(f)
		s.Head = e.RunSeq
	}
	return s, nil
}

// InFlight lists the activity attempts of p that are dispatched and have no
// outcome, as the Cancel requests to send them; a CANCELLED run's list is
// what to cancel again if a cancel message was lost.
func (s State) InFlight(p *plan.Plan, reason string) []Cancel {
	var out []Cancel
	s.activities(p, func(ps *plan.Step, st StepState) {
		if st.InFlight() {
			out = append(out, Cancel{RunID: s.RunID, StepID: ps.ID, LogicalAttempt: st.Attempt,
				Queue: queueOf(ps), Reason: reason})
		}
	})
	return out
}

// Timers lists the timers a live run of p needs armed: retries not yet
// scheduled, the timeouts of waiting waitSignal steps and those of
// timeouts.go. The shell may set them again after a restart; setting a
// timer is idempotent.
func (s State) Timers(p *plan.Plan) []Timer {
	if s.Status.Terminal() {
		return nil
	}
	var out []Timer
	add := func(id string, st StepState) {
		switch {
		case st.Status == events.StepStatusPending && !st.Scheduled && !st.RetryAt.IsZero():
			out = append(out, Timer{RunID: s.RunID, StepID: id, LogicalAttempt: st.Attempt, Kind: TimerRetry, DueAt: st.RetryAt})
		case st.InFlight() && !st.Deadline.IsZero():
			out = append(out, Timer{RunID: s.RunID, StepID: id, LogicalAttempt: st.Attempt, Kind: TimerWaitTimeout, DueAt: st.Deadline})
		}
	}
	for i := range p.Steps {
		add(p.Steps[i].ID, s.Steps[p.Steps[i].ID])
	}
	s.elements(p, func(ps *plan.Step, st StepState) { add(ps.ID, st) })
	return append(out, s.timeoutTimers(p)...)
}

// clone copies s's maps, so that changing the copy leaves s alone.
func (s State) clone() State {
	s.Steps = maps.Clone(s.Steps)
	s.Signals = maps.Clone(s.Signals)
	s.Fans = maps.Clone(s.Fans)
	s.Elements = maps.Clone(s.Elements)
	s.Pending = slices.Clone(s.Pending)
	s.Buffered = slices.Clone(s.Buffered)
	s.ChildEnds = slices.Clone(s.ChildEnds)
	if s.Steps == nil {
		s.Steps = map[string]StepState{}
	}
	if s.Signals == nil {
		s.Signals = map[SignalRef]bool{}
	}
	if s.Status == "" {
		s.Status = events.RunStatusPending
	}
	return s
}

// attemptID formats a logical attempt or occurrence number for the
// envelope; 0 is the empty string of run-level events.
func attemptID(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}
