package decide

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/weftrun/weft/pkg/events"
)

// fact is one event as the state reads it. Decide applies the events it
// emits to its working state through the same fact, so that folding the
// appended events gives exactly the state Decide reasoned about.
type fact struct {
	typ     events.Type
	stepID  string
	attempt int // the logical attempt, or the occurrence number; 0 if none
	engine  string
	signal  string // causedBySignalId
	parent  string // parentEventId
	eventID string
	at      time.Time // emittedAt: for the engine's events, the Now of the round that decided them
	data    any       // the decoded payload, for the types the state reads
}

// envelopeOf is the fact of e without its payload.
func envelopeOf(e events.Event) fact {
	f := fact{typ: e.EventType, stepID: e.StepID, engine: e.EngineAttemptID, signal: e.CausedBySignalID,
		parent: e.ParentEventID, eventID: e.EventID, at: e.EmittedAt}
	if n, err := strconv.Atoi(e.LogicalAttemptID); err == nil && n > 0 {
		f.attempt = n
	}
	return f
}

// factOfDecided is the fact of e, built from spec, with spec's payload
// as it is, undecoded (State.ApplyDecided).
func factOfDecided(e events.Event, spec events.Spec) (fact, error) {
	if e.EventType != spec.Type || e.StepID != spec.StepID || e.LogicalAttemptID != spec.LogicalAttemptID {
		return fact{}, &events.MalformedEventError{RunID: e.RunID, RunSeq: e.RunSeq, Type: e.EventType,
			Err: fmt.Errorf("not built from its decision's %s of step %q attempt %q", spec.Type, spec.StepID, spec.LogicalAttemptID)}
	}
	f := envelopeOf(e)
	f.data = spec.Data
	return f, nil
}

// factOf decodes an event into a fact.
func factOf(e events.Event) (fact, error) {
	f := envelopeOf(e)
	var err error
	switch e.EventType {
	case events.StepScheduled:
		f.data, err = decode[stepScheduledData](e)
	case events.StepStarted:
		// Leniently: the key it may carry only feeds reconciliation records,
		// and a StepStarted the engine read nothing from before must not
		// stop the fold now.
		f.data, _ = decode[stepStartedData](e)
	case events.StepFailed:
		f.data, err = decode[events.StepFailedData](e)
	case events.StepRetryScheduled:
		f.data, err = decode[events.StepRetryScheduledData](e)
	case events.SignalApplied:
		f.data, err = decode[events.SignalAppliedData](e)
	case events.SignalAccepted:
		f.data, err = decode[events.SignalAcceptedData](e)
	case events.RunStarted:
		f.data, err = decode[events.RunStartedData](e)
	case events.RunApproved:
		f.data, err = decode[runApprovedData](e)
	case events.StepCompleted:
		f.data, err = decode[events.StepCompletedData](e)
	case events.StepSkipped:
		f.data, err = decode[stepSkippedData](e)
	case events.ChildRunEnded:
		f.data, err = decode[events.ChildRunEndedData](e)
	default: // the other payloads hold nothing the state keeps
	}
	return f, err
}

// decode returns e's payload as a T (a value, as Decide's facts carry).
func decode[T any](e events.Event) (any, error) {
	var d T
	err := e.Data(&d)
	return d, err
}

// factOfSpec is the fact of an event the decider emits.
func factOfSpec(e events.Spec, attempt int) fact {
	return fact{typ: e.Type, stepID: e.StepID, attempt: attempt, engine: e.EngineAttemptID,
		signal: e.CausedBySignalID, parent: e.ParentEventID, at: e.EmittedAt, data: e.Data}
}

// apply folds one fact into s, whose maps s owns.
func (s *State) apply(f fact) {
	switch f.typ {
	case events.RunApproved, events.RunStarted, events.RunPaused, events.RunResumed,
		events.RunCompleted, events.RunFailed, events.RunCancelled:
		if d, ok := f.data.(events.RunStartedData); ok && f.typ == events.RunStarted {
			s.DelayedUntil = d.DelayedUntil
		}
		if (f.typ == events.RunStarted && s.Run.StartedAt.IsZero()) ||
			(f.typ == events.RunResumed && s.Status == events.RunStatusFailed) {
			s.Run.StartedAt = f.at // a reopened run's runTimeout counts afresh
		}
		if d, ok := f.data.(runApprovedData); ok && s.Status == events.RunStatusPending {
			s.Run = RunInfo{TenantID: d.TenantID, ProjectID: d.ProjectID, EnvironmentID: d.EnvironmentID,
				PlanID: d.PlanID, Priority: d.Priority, Input: compactJSON(d.Input)}
			if d.Parent != nil {
				s.Run.Parent = *d.Parent
			}
			s.Run.Rerun = d.RerunOf
		}
		s.applyRun(f.typ)
	case events.StepScheduled, events.StepStarted, events.StepCompleted, events.StepFailed,
		events.StepSkipped, events.StepRetryScheduled:
		if f.typ == events.StepCompleted && f.parent != "" {
			s.unbuffer(f.parent)
		}
		s.applyStep(f)
		if st, _ := s.stepState(f.stepID); len(s.ChildEnds) > 0 && (st.Attempt != f.attempt || !st.InFlight()) {
			s.ChildEnds = dropChildEnd(s.ChildEnds, f.stepID, f.attempt)
		}
	case events.ChildRunEnded:
		s.childRunEnded(f)
	case events.SignalApplied:
		d, _ := f.data.(events.SignalAppliedData)
		s.SignalsApplied++
		ref := SignalRef{Name: d.SignalName, ID: d.SignalID}
		s.Signals[ref] = true
		if d.Outcome == events.SignalOutcomeBuffered {
			s.buffer(ref)
		}
		s.Pending = orNil(slices.DeleteFunc(s.Pending, func(p SignalAccepted) bool { return p.ref() == ref }))
	case events.SignalAccepted:
		s.accepted(f)
	case events.RunQueued:
		s.Queued = s.Status == events.RunStatusApproved
	default: // SignalRejected and unknown types
	}
}

// childRunEnded records the end of the child of a subPlan attempt in
// flight, which the run's next round acts on (State.ChildEnds).
func (s *State) childRunEnded(f fact) {
	d, _ := f.data.(events.ChildRunEndedData)
	st, ok := s.stepState(f.stepID)
	if !ok || st.Attempt != f.attempt || !st.InFlight() || (st.ChildRunID != "" && st.ChildRunID != d.ChildRunID) {
		return
	}
	s.ChildEnds = append(s.ChildEnds, ChildEnded{StepID: f.stepID, LogicalAttempt: f.attempt, ChildRunEndedData: d})
}

// buffer keeps the pending signal ref, with its payload, for a waitSignal
// step that will wait for it.
func (s *State) buffer(ref SignalRef) {
	i := slices.IndexFunc(s.Pending, func(p SignalAccepted) bool { return p.ref() == ref })
	if i < 0 {
		return // its SignalAccepted precedes it in every log: not reached
	}
	s.Buffered = append(s.Buffered, s.Pending[i])
}

// unbuffer drops the buffered signal whose SignalAccepted event is
// parent: a StepCompleted that names its parent event consumed it.
func (s *State) unbuffer(parent string) {
	if i := slices.IndexFunc(s.Buffered, func(b SignalAccepted) bool { return b.EventID == parent }); i >= 0 {
		s.Buffered = orNil(slices.Delete(s.Buffered, i, i+1))
	}
}

// accepted records an accepted signal as pending, unless it was applied or
// is pending already.
func (s *State) accepted(f fact) {
	d, _ := f.data.(events.SignalAcceptedData)
	s.accept(SignalAccepted{SignalID: d.SignalID, Name: d.SignalName, Payload: d.Payload, EventID: f.eventID})
}

// pendingBefore returns the pending signals accepted before the signal
// ref, in acceptance order: those ahead of it in Pending, or all of them
// when ref is not pending.
func (s *State) pendingBefore(ref SignalRef) []SignalAccepted {
	i := slices.IndexFunc(s.Pending, func(p SignalAccepted) bool { return p.ref() == ref })
	if i < 0 {
		i = len(s.Pending)
	}
	return slices.Clone(s.Pending[:i])
}

// orNil is l, or nil when l is empty: a folded state and Decide's working
// state then compare equal whichever way their lists emptied.
func orNil(l []SignalAccepted) []SignalAccepted {
	if len(l) == 0 {
		return nil
	}
	return l
}

// accept records in as pending, unless it was applied or is pending
// already.
func (s *State) accept(in SignalAccepted) {
	if in.SignalID == "" || s.Signals[in.ref()] ||
		slices.ContainsFunc(s.Pending, func(p SignalAccepted) bool { return p.ref() == in.ref() }) {
		return
	}
	s.Pending = append(s.Pending, SignalAccepted{SignalID: in.SignalID, Name: in.Name, Payload: in.Payload, EventID: in.EventID})
}

// applyRun applies a run event, with the reducer's rules: terminal
// statuses are absorbing, except that RunResumed reopens a FAILED run
// (RETRY_STEP); RunStarted and RunResumed mean RUNNING.
func (s *State) applyRun(t events.Type) {
	switch t {
	case events.RunPaused:
		s.Pauses++
	case events.RunResumed:
		s.Resumes++
	case events.RunFailed:
		s.Failures++
	default:
	}
	if s.Status.Terminal() && (t != events.RunResumed || s.Status != events.RunStatusFailed) {
		return
	}
	switch t {
	case events.RunApproved:
		if s.Status == events.RunStatusPending {
			s.Status = events.RunStatusApproved
		}
	case events.RunStarted, events.RunResumed:
		s.Status, s.Queued = events.RunStatusRunning, false
	case events.RunPaused:
		s.Status = events.RunStatusPaused
	case events.RunCompleted:
		s.Status = events.RunStatusCompleted
	case events.RunFailed:
		s.Status = events.RunStatusFailed
	case events.RunCancelled:
		s.Status = events.RunStatusCancelled
	default:
	}
}

// applyStep applies a step event. As in the events reducer, an event of an
// older attempt is ignored, a newer attempt starts afresh, and an attempt's
// first outcome wins.
func (s *State) applyStep(f fact) {
	if s.applyChild(f) {
		return
	}
	st, ok := s.Steps[f.stepID]
	if !ok || f.attempt == 0 || f.attempt < st.Attempt {
		return
	}
	s.Steps[f.stepID] = nextStep(st, f)
	s.refan(f)
}

// applyChild applies f if it is a step event of an element of a forEach
// step whose current attempt is scheduled (events.ChildStepID), and
// updates the step's Fan; it reports whether f was such an event.
func (s *State) applyChild(f fact) bool {
	if len(s.Fans) == 0 {
		return false
	}
	parent, i, ok := events.ParseChildStepID(f.stepID)
	fan, fanned := s.Fans[parent]
	if !ok || !fanned || i >= len(fan.Items) {
		return false
	}
	before := s.child(parent, i)
	if f.attempt == 0 || f.attempt < before.Attempt {
		return true
	}
	after := nextStep(before, f)
	s.setElement(parent, i, after)
	s.setFan(parent, s.moved(fan, parent, i, before, after))
	return true
}

// refan keeps the Fan of a forEach step in step with its attempt: its
// StepScheduled (with forEach) derives one, and an attempt not scheduled
// has none.
func (s *State) refan(f fact) {
	st := s.Steps[f.stepID]
	if d, ok := f.data.(stepScheduledData); ok && d.ForEach != nil && f.typ == events.StepScheduled {
		s.setFan(f.stepID, s.newFan(f.stepID, st.Input))
	} else if _, ok := s.Fans[f.stepID]; ok && !st.Scheduled {
		delete(s.Fans, f.stepID)
		if len(s.Fans) == 0 {
			s.Fans = nil // as a restored state has it
		}
	}
}

// nextStep returns step state st after f, an event of its current or a
// newer attempt.
func nextStep(st StepState, f fact) StepState {
	if f.attempt > st.Attempt {
		st = StepState{Status: events.StepStatusPending, Attempt: f.attempt, SeriesStart: st.SeriesStart}
	}
	switch f.typ {
	case events.StepScheduled:
		d, _ := f.data.(stepScheduledData)
		st.Scheduled, st.RetryAt, st.Deadline, st.ScheduledAt = true, time.Time{}, d.Deadline, f.at
		st.Input, st.ChildRunID = compactJSON(d.Input), d.ChildRunID
	case events.StepStarted:
		d := startedOf(f.data)
		if st.Status == events.StepStatusPending {
			st.Status, st.Error, st.StartedAt = events.StepStatusRunning, events.StepError{}, cmp.Or(d.StartedAt, f.at)
		}
		if d.ActivityKey != "" && st.ActivityKey == "" {
			st.ActivityKey = d.ActivityKey
		}
		st.EngineAttemptID = f.engine
	case events.StepCompleted, events.StepFailed, events.StepSkipped:
		st = finish(st, f)
	case events.StepRetryScheduled:
		st = retry(st, f)
	default:
	}
	return st
}

// finish records an attempt's outcome unless it has one.
func finish(st StepState, f fact) StepState {
	if st.Status.Terminal() {
		return st
	}
	switch f.typ {
	case events.StepCompleted:
		d := completedOf(f.data)
		st.Status, st.Error = events.StepStatusSuccess, events.StepError{}
		st.Output, st.Artifacts = compactJSON(d.Output), artifactsJSON(d.Artifacts)
	case events.StepFailed:
		d, _ := f.data.(events.StepFailedData)
		st.Status, st.Error = events.StepStatusFailed, d.Error
	default:
		d, _ := f.data.(stepSkippedData)
		st.Status, st.SkippedByCondition = events.StepStatusSkipped, d.Condition
	}
	if f.engine != "" {
		st.EngineAttemptID = f.engine
	}
	st.Deadline = time.Time{}
	return st
}

// retry starts the attempt a StepRetryScheduled names, if it is newer. One
// caused by a signal (RETRY_STEP) starts a fresh retry-policy series.
func retry(st StepState, f fact) StepState {
	d, _ := f.data.(events.StepRetryScheduledData)
	next, err := strconv.Atoi(d.NextLogicalAttemptID)
	if err != nil || next <= st.Attempt {
		return st
	}
	series := st.SeriesStart
	if f.signal != "" {
		series = next
	}
	return StepState{Status: events.StepStatusPending, Attempt: next, SeriesStart: series,
		RetryAt: d.RetryAt, Error: d.Error}
}
