package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// ErrWrongRun is wrapped by the error the reducer returns for an event whose
// runId is not the snapshot's. Test for it with errors.Is.
var ErrWrongRun = errors.New("events: event belongs to another run")

// errSeqNotAssigned is the cause given for an event whose runSeq is not
// positive: the append authority has not persisted it.
var errSeqNotAssigned = errors.New("runSeq is not assigned (must be at least 1)")

// Error codes the reducer writes into StepError.Code when an event carries a
// reason rather than an error.
const (
	// CodeSkipped is the code of the error recorded for a SKIPPED step; its
	// message is the StepSkipped reason.
	CodeSkipped = "SKIPPED"
	// CodeRunFailed is the code of the root cause recorded for a RunFailed
	// that names neither an error nor a step with one; its message is the
	// RunFailed reason.
	CodeRunFailed = "RUN_FAILED"
	// CodeCancelled is the code of the error recorded for a step whose
	// attempt the run's cancellation ended; its message is the RunCancelled
	// reason.
	CodeCancelled = "CANCELLED"
)

// GapError reports a gap in a run's log: the next event's runSeq is more
// than one past the last applied one. The reducer stops at a gap and never
// applies past it; the caller marks the run STALE and refetches from
// LastEventSeq (state-store contract §4.2). Test for it with errors.As.
type GapError struct {
	RunID        string
	LastEventSeq int64 // highest runSeq applied
	NextSeq      int64 // runSeq of the event that was not applied
}

// Error implements error.
func (e *GapError) Error() string {
	return fmt.Sprintf("events: gap in run %s: last applied runSeq %d, next event has runSeq %d",
		e.RunID, e.LastEventSeq, e.NextSeq)
}

// DetectGap reports whether an event with runSeq nextSeq cannot be applied
// after lastSeq because events lastSeq+1 … nextSeq-1 are missing.
func DetectGap(lastSeq, nextSeq int64) bool { return nextSeq > lastSeq+1 }

// Project replays events onto an empty snapshot of run runID (status
// PENDING, lastEventSeq 0). It is ProjectIncremental from that snapshot;
// see there for ordering, duplicates, gaps and errors.
func Project(runID string, events []Event) (RunSnapshot, error) {
	return ProjectIncremental(RunSnapshot{RunID: runID, Status: RunStatusPending}, events)
}

// ProjectIncremental applies events to s and returns the new snapshot. It is
// pure: it does no I/O, never modifies s or anything s points to, and the
// result shares no memory with s or events. A zero Status in s is read as
// PENDING.
//
// Events must be in increasing runSeq order. An event whose runSeq is at
// most the snapshot's LastEventSeq is a duplicate and is skipped, so
// re-applying events is harmless. Each event applied must have runSeq
// LastEventSeq+1; a larger one is a gap. On a gap, an event of another run
// (ErrWrongRun), an event with runSeq < 1 or an event the reducer cannot
// read (*MalformedEventError), ProjectIncremental stops and returns the
// snapshot as of the last event applied together with the error (a
// *GapError for a gap). LastEventSeq is the runSeq of the last event
// applied.
//
// Reduction rules (execution-semantics §1.5), with time meaning persistedAt,
// or emittedAt when persistedAt is zero:
//
//   - RunApproved: APPROVED, and the run's input. RunPaused: PAUSED. RunResumed: RUNNING.
//   - RunStarted: RUNNING; engineRunRef from the envelope, else from the
//     payload; startedAt set by the first RunStarted.
//   - RunCompleted, RunFailed, RunCancelled: that status; completedAt, and
//     totalDurationMs when the run had started. RunFailed records the root
//     cause: the payload's error, else the error of the step it names, else
//     {Code: CodeRunFailed, Message: reason}. RunCancelled ends every step
//     attempt still PENDING or RUNNING as CANCELLED, completedAt the
//     cancellation's time, error {Code: CodeCancelled, Message: reason}:
//     the engine records no outcome for them afterwards.
//   - Terminal run statuses are absorbing: once COMPLETED, FAILED or
//     CANCELLED, later run events (a late RunResumed, a second terminal
//     event) leave the run's status, times and root cause alone, with one
//     exception: RunResumed reopens a FAILED run (an operator's RETRY_STEP
//     brought a failed step back), clearing completedAt, totalDurationMs
//     and the root cause. Step events still update their steps, within
//     the rules below (an attempt RunCancelled ended has its end).
//   - RunQueued: QUEUED, with Queued (the payload's reason, the event's
//     time), when the run is APPROVED; it changes nothing in any other
//     status. Leaving QUEUED (RunStarted, RunCancelled) clears Queued.
//   - SignalAccepted, SignalRejected, SignalApplied and types this
//     version does not know change nothing but LastEventSeq; their payloads
//     are not decoded.
//   - Step events follow the rules on applyStep: steps appear in first-seen
//     order, events of an older logical attempt are ignored, a newer one
//     starts a fresh attempt, and within an attempt a step only moves
//     forward (PENDING, RUNNING, then its first outcome).
//   - Artifacts is the concatenation of the steps' artifacts in step order;
//     FailedSteps counts the steps whose status is FAILED, but for the
//     children of forEach steps, which their parent's ForEach counts.
func ProjectIncremental(s RunSnapshot, events []Event) (RunSnapshot, error) {
	p := newProjection(s)
	err := p.applyAll(events)
	return p.result(), err
}

// projection is the working copy one ProjectIncremental call mutates.
type projection struct {
	s     RunSnapshot
	steps map[string]int // stepId -> index in s.Steps
}

// newProjection deep-copies s so that nothing reachable from s is written.
func newProjection(s RunSnapshot) *projection {
	p := &projection{s: s.clone(), steps: make(map[string]int, len(s.Steps))}
	if p.s.Status == "" {
		p.s.Status = RunStatusPending
	}
	for i, st := range p.s.Steps {
		p.steps[st.StepID] = i
	}
	return p
}

// applyAll applies events in order and stops at the first error.
func (p *projection) applyAll(events []Event) error {
	for _, e := range events {
		if e.RunID != p.s.RunID {
			return fmt.Errorf("%w: %s event at runSeq %d is for run %q, snapshot is for run %q",
				ErrWrongRun, e.EventType, e.RunSeq, e.RunID, p.s.RunID)
		}
		if e.RunSeq < 1 {
			return e.malformed(errSeqNotAssigned)
		}
		if e.RunSeq <= p.s.LastEventSeq {
			continue // duplicate: already applied
		}
		if DetectGap(p.s.LastEventSeq, e.RunSeq) {
			return &GapError{RunID: p.s.RunID, LastEventSeq: p.s.LastEventSeq, NextSeq: e.RunSeq}
		}
		if err := p.apply(e); err != nil {
			return err
		}
		p.s.LastEventSeq = e.RunSeq
	}
	return nil
}

// apply applies one event. It changes nothing when it returns an error.
func (p *projection) apply(e Event) error {
	switch e.EventType {
	case RunApproved, RunStarted, RunPaused, RunResumed, RunCompleted, RunFailed, RunCancelled:
		return p.applyRun(e)
	case RunQueued:
		return p.queue(e)
	case StepScheduled, StepStarted, StepCompleted, StepFailed, StepSkipped, StepRetryScheduled:
		return p.applyStep(e)
	default: // signals and unknown types do not change the snapshot
		return nil
	}
}

// applyRun applies a run-level event; payloads are decoded before the
// terminal check so that a malformed event is reported whatever the state.
func (p *projection) applyRun(e Event) error {
	var approved struct {
		Input   json.RawMessage   `json:"input"`
		Parent  *RunParent        `json:"parent"`
		RerunOf *RerunOf          `json:"rerunOf"`
		Labels  map[string]string `json:"labels"`
	}
	var started RunStartedData
	var completed RunCompletedData
	var failed RunFailedData
	var cancelled RunCancelledData
	var err error
	switch e.EventType {
	case RunApproved:
		err = e.Data(&approved)
	case RunStarted:
		err = e.Data(&started)
	case RunCompleted:
		err = e.Data(&completed)
	case RunFailed:
		err = e.Data(&failed)
	case RunCancelled:
		err = e.Data(&cancelled)
	default: // the other run events carry nothing the snapshot records
	}
	if err != nil {
		return err
	}
	if p.s.Status.Terminal() {
		if e.EventType == RunResumed && p.s.Status == RunStatusFailed {
			p.reopen()
		}
		return nil
	}
	p.s.Queued = nil
	switch e.EventType {
	case RunApproved:
		p.s.Status = RunStatusApproved
		p.s.Input = slices.Clone(approved.Input)
		p.s.Parent = clonePtr(approved.Parent)
		if r := approved.RerunOf; r != nil {
			p.s.RerunOf = &RunRerun{RunID: r.RunID, FromStepID: r.FromStepID}
		}
		p.s.Labels = maps.Clone(approved.Labels)
	case RunStarted:
		p.start(e, started)
	case RunPaused:
		p.s.Status = RunStatusPaused
	case RunResumed:
		p.s.Status = RunStatusRunning
	case RunCompleted:
		p.s.Output = slices.Clone(completed.Output)
		p.finish(e, RunStatusCompleted)
	case RunFailed:
		p.s.Error = p.rootCause(failed)
		p.finish(e, RunStatusFailed)
	case RunCancelled:
		p.finish(e, RunStatusCancelled)
		p.cancelSteps(eventTime(e), cancelled.Reason)
	default: // apply only routes run events here
	}
	return nil
}

// queue applies RunQueued.
func (p *projection) queue(e Event) error {
	var d RunQueuedData
	if err := e.Data(&d); err != nil {
		return err
	}
	if p.s.Status == RunStatusApproved {
		p.s.Status = RunStatusQueued
		p.s.Queued = &QueueHold{Reason: d.Reason, Key: d.Key, Since: eventTime(e)}
	}
	return nil
}

// start applies RunStarted.
func (p *projection) start(e Event, d RunStartedData) {
	p.s.Status = RunStatusRunning
	ref := e.EngineRunRef
	if len(ref) == 0 {
		ref = d.EngineRunRef
	}
	if len(ref) > 0 {
		p.s.EngineRunRef = slices.Clone(ref)
	}
	if p.s.StartedAt == nil {
		p.s.StartedAt = timePtr(eventTime(e))
	}
}

// reopen applies a RunResumed to a FAILED run: an operator's RETRY_STEP
// brought a failed step back, and the run runs again. The failure's
// completedAt, duration and error no longer hold.
func (p *projection) reopen() {
	p.s.Status = RunStatusRunning
	p.s.CompletedAt, p.s.TotalDurationMs, p.s.Error = nil, nil, nil
}

// finish moves the run to a terminal status at the event's time.
func (p *projection) finish(e Event, status RunStatus) {
	at := eventTime(e)
	p.s.Status = status
	p.s.CompletedAt = &at
	if p.s.StartedAt != nil {
		ms := max(0, at.Sub(*p.s.StartedAt).Milliseconds())
		p.s.TotalDurationMs = &ms
	}
}

// cancelSteps ends the attempts a RunCancelled finds PENDING or RUNNING.
func (p *projection) cancelSteps(at time.Time, reason string) {
	for i := range p.s.Steps {
		st := &p.s.Steps[i]
		if st.Status.Terminal() {
			continue
		}
		st.Status = StepStatusCancelled
		st.CompletedAt = timePtr(at)
		st.Error = &StepError{Code: CodeCancelled, Message: reason}
	}
}

// rootCause picks the root cause of a RunFailed; see ProjectIncremental.
func (p *projection) rootCause(d RunFailedData) *StepError {
	if d.Error != nil {
		return clonePtr(d.Error)
	}
	if i, ok := p.steps[d.StepID]; ok && p.s.Steps[i].Error != nil {
		return clonePtr(p.s.Steps[i].Error)
	}
	return &StepError{Code: CodeRunFailed, Message: d.Reason}
}

// result returns the snapshot with the derived aggregates recomputed.
func (p *projection) result() RunSnapshot {
	s := p.s
	s.Artifacts = make([]ArtifactRef, 0, len(s.Artifacts))
	s.FailedSteps = 0
	for i := range s.Steps {
		if f := s.Steps[i].ForEach; f != nil {
			f.Done, f.Running, f.Failed = 0, 0, 0
		}
	}
	for _, st := range s.Steps {
		s.Artifacts = append(s.Artifacts, st.Artifacts...)
		if f := p.forEachOf(st.StepID); f != nil {
			f.count(st.Status)
		} else if st.Status == StepStatusFailed {
			s.FailedSteps++
		}
	}
	return s
}

// forEachOf returns the progress of the forEach step whose child stepID
// is, or nil when stepID is no such child.
func (p *projection) forEachOf(stepID string) *ForEachProgress {
	parent, _, ok := ParseChildStepID(stepID)
	if !ok {
		return nil
	}
	i, ok := p.steps[parent]
	if !ok {
		return nil
	}
	return p.s.Steps[i].ForEach
}

// eventTime is the time the reducer records for an event: when the log
// persisted it, or when it was emitted if it has no persistedAt.
func eventTime(e Event) time.Time {
	if !e.PersistedAt.IsZero() {
		return e.PersistedAt
	}
	return e.EmittedAt
}

// timePtr returns a pointer to a copy of t.
func timePtr(t time.Time) *time.Time { return &t }
