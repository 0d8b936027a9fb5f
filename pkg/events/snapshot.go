package events

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"
)

// RunStatus is the status of a run in a RunSnapshot.
type RunStatus string

// The run statuses of execution-semantics §1.4, and QUEUED.
const (
	RunStatusPending  RunStatus = "PENDING"
	RunStatusApproved RunStatus = "APPROVED"
	// RunStatusQueued is an approved run its environment's admission limit
	// holds before its start (RunQueued); RunSnapshot.Queued says why. It
	// is a status of the snapshot only: the contract's state machine, and
	// the engine, keep such a run APPROVED.
	RunStatusQueued    RunStatus = "QUEUED"
	RunStatusRunning   RunStatus = "RUNNING"
	RunStatusPaused    RunStatus = "PAUSED"
	RunStatusCompleted RunStatus = "COMPLETED"
	RunStatusFailed    RunStatus = "FAILED"
	RunStatusCancelled RunStatus = "CANCELLED"
)

// Terminal reports whether s is COMPLETED, FAILED or CANCELLED. Terminal
// statuses are absorbing, except that RunResumed reopens a FAILED run
// (RETRY_STEP on a failed run).
func (s RunStatus) Terminal() bool {
	switch s {
	case RunStatusCompleted, RunStatusFailed, RunStatusCancelled:
		return true
	default:
		return false
	}
}

// StepStatus is the status of a step in a StepSnapshot.
type StepStatus string

// The step statuses of execution-semantics §1.4.
const (
	StepStatusPending StepStatus = "PENDING"
	StepStatusRunning StepStatus = "RUNNING"
	StepStatusSuccess StepStatus = "SUCCESS"
	StepStatusFailed  StepStatus = "FAILED"
	StepStatusSkipped StepStatus = "SKIPPED"
	// StepStatusCancelled ends an attempt that was PENDING or RUNNING when
	// its run was cancelled (RunCancelled): no outcome of it is recorded.
	StepStatusCancelled StepStatus = "CANCELLED"
)

// Terminal reports whether s is SUCCESS, FAILED, SKIPPED or CANCELLED, the
// ends of a logical attempt. Only a new logical attempt moves a step out of
// one.
func (s StepStatus) Terminal() bool {
	switch s {
	case StepStatusSuccess, StepStatusFailed, StepStatusSkipped, StepStatusCancelled:
		return true
	default:
		return false
	}
}

// RunSnapshot is the state of a run derived from its event log by Project
// and ProjectIncremental (execution-semantics §1.4). It is a value: the
// reducer returns a new snapshot and never modifies one it was given, and
// a snapshot shares no memory with another one the reducer returned.
//
// Snapshots produced by the reducer have non-nil Steps, Artifacts and
// StepSnapshot.Artifacts, so they marshal as [] rather than null.
type RunSnapshot struct {
	RunID  string    `json:"runId"`
	Status RunStatus `json:"status"`
	// LastEventSeq is the highest runSeq applied: the watermark from which
	// the next fetch continues. Zero before any event.
	LastEventSeq int64 `json:"lastEventSeq"`
	// Steps are ordered by first appearance in the log.
	Steps []StepSnapshot `json:"steps"`
	// Artifacts aggregates the artifacts of every step, in step order.
	Artifacts []ArtifactRef `json:"artifacts"`
	// StartedAt is the time of the first RunStarted.
	StartedAt *time.Time `json:"startedAt,omitempty"`
	// CompletedAt is the time of the terminal run event.
	CompletedAt *time.Time `json:"completedAt,omitempty"`
	// TotalDurationMs is CompletedAt-StartedAt in milliseconds, clamped at
	// zero; set only when the run is terminal and had started.
	TotalDurationMs *int64 `json:"totalDurationMs,omitempty"`
	// FailedSteps is the number of steps whose status is FAILED, not
	// counting the children of forEach steps: their parent's ForEach
	// counts them, and a failed child fails its parent.
	FailedSteps  int             `json:"failedSteps"`
	EngineRunRef json.RawMessage `json:"engineRunRef,omitempty"`
	// Error is the root cause of a FAILED run.
	Error *StepError `json:"error,omitempty"`
	// Input is the run's input document, from its RunApproved; absent
	// when the run has none.
	Input json.RawMessage `json:"input,omitempty"`
	// Output is the output of a COMPLETED run whose plan has one.
	Output json.RawMessage `json:"output,omitempty"`
	// Queued is set while the run is QUEUED: why its admission limit holds
	// it, and since when.
	Queued *QueueHold `json:"queued,omitempty"`
	// Parent is, on a child run, the run and subPlan step that started
	// it, from its RunApproved.
	Parent *RunParent `json:"parent,omitempty"`
	// RerunOf is, on a rerun, the run it reruns and from which step.
	RerunOf *RunRerun `json:"rerunOf,omitempty"`
	// Labels are the run's labels, from its RunApproved; absent when it
	// has none.
	Labels map[string]string `json:"labels,omitempty"`
}

// QueueHold is why a QUEUED run waits, from its RunQueued.
type QueueHold struct {
	// Reason says which limit holds the run, e.g. "2 of 2 running in
	// environment cust-1"; empty for a RunQueued written without one.
	Reason string `json:"reason,omitempty"`
	// Key names the plan's concurrency key that holds the run
	// (RunQueuedData.Key, `input.customerId = "42"`); empty when its
	// environment's limit does. The runs list filters QUEUED runs by it
	// (queuedKey).
	Key string `json:"key,omitempty"`
	// Since is when the run was queued.
	Since time.Time `json:"since"`
}

// StepSnapshot is the state of one step of a run, as of its current
// logical attempt.
type StepSnapshot struct {
	StepID string     `json:"stepId"`
	Status StepStatus `json:"status"`
	// LogicalAttemptID is the current logical attempt.
	LogicalAttemptID string `json:"logicalAttemptId"`
	// EngineAttemptID is the highest platform attempt seen for the current
	// logical attempt.
	EngineAttemptID string `json:"engineAttemptId,omitempty"`
	// StartedAt is when the current logical attempt first started.
	StartedAt *time.Time `json:"startedAt,omitempty"`
	// CompletedAt is when the current logical attempt reached its outcome.
	CompletedAt *time.Time `json:"completedAt,omitempty"`
	// Artifacts are those of the current logical attempt.
	Artifacts []ArtifactRef `json:"artifacts"`
	// Error is why the attempt failed, was skipped (Code "SKIPPED") or was
	// cancelled (Code "CANCELLED"), or, on a PENDING step, why the previous
	// attempt failed.
	Error *StepError `json:"error,omitempty"`
	// Attempts counts the StepStarted events applied to the step over all
	// its logical and engine attempts.
	Attempts int `json:"attempts"`
	// ForEach is set on a forEach step once its StepScheduled recorded the
	// fan-out. The step's inputs and outputs, and those of its children,
	// are not in the snapshot: they stay in the event log (StepDetails),
	// so the snapshot grows by one small entry per child and no more.
	ForEach *ForEachProgress `json:"forEach,omitempty"`
	// ChildRunID is the child run the current attempt of a subPlan step
	// started, from its StepScheduled.
	ChildRunID string `json:"childRunId,omitempty"`
	// ReusedFrom is set on a step a rerun did not run: the source run's
	// event whose outcome it copied.
	ReusedFrom *EventRef `json:"reusedFrom,omitempty"`
}

// ForEachProgress is the fan-out of a forEach step and how far its
// children (the steps ChildStepID names) got: Done, Running and Failed
// count the children whose status is SUCCESS, RUNNING and FAILED; the
// rest of Count are pending, skipped or cancelled.
type ForEachProgress struct {
	ForEachData
	Done    int `json:"done"`
	Running int `json:"running"`
	Failed  int `json:"failed"`
}

// count adds a child in status st to the progress.
func (f *ForEachProgress) count(st StepStatus) {
	switch st {
	case StepStatusSuccess:
		f.Done++
	case StepStatusRunning:
		f.Running++
	case StepStatusFailed:
		f.Failed++
	default: // pending, skipped and cancelled children are not counted
	}
}

// StepsDone counts the steps of s that are SUCCESS or SKIPPED, a forEach
// step once (TopSteps), not its children: the runs list's stepsDone.
func (s RunSnapshot) StepsDone() int {
	n := 0
	for _, st := range s.TopSteps() {
		if st.Status == StepStatusSuccess || st.Status == StepStatusSkipped {
			n++
		}
	}
	return n
}

// TopSteps returns the steps of s that are not children of a forEach
// step (ChildStepID): the plan's steps, whose children their parent's
// ForEach counts. It allocates only when s has forEach steps.
func (s RunSnapshot) TopSteps() []StepSnapshot {
	fanOut := map[string]bool{}
	for _, st := range s.Steps {
		if st.ForEach != nil {
			fanOut[st.StepID] = true
		}
	}
	if len(fanOut) == 0 {
		return s.Steps
	}
	top := make([]StepSnapshot, 0, len(s.Steps))
	for _, st := range s.Steps {
		if parent, _, ok := ParseChildStepID(st.StepID); !ok || !fanOut[parent] {
			top = append(top, st)
		}
	}
	return top
}

// Children returns the snapshots of forEach step parent's children (the
// steps ChildStepID names), in element order, with an index above after
// (-1 for all); children not yet scheduled have no snapshot.
func (s RunSnapshot) Children(parent string, after int) []StepSnapshot {
	type child struct {
		index int
		st    StepSnapshot
	}
	var kids []child
	for _, st := range s.Steps {
		if p, i, ok := ParseChildStepID(st.StepID); ok && p == parent && i > after {
			kids = append(kids, child{i, st})
		}
	}
	slices.SortFunc(kids, func(a, b child) int { return cmp.Compare(a.index, b.index) })
	out := make([]StepSnapshot, len(kids))
	for i, k := range kids {
		out[i] = k.st
	}
	return out
}

// clone returns a deep copy of s with non-nil slices.
func (s RunSnapshot) clone() RunSnapshot {
	c := s
	c.Steps = make([]StepSnapshot, len(s.Steps))
	for i, st := range s.Steps {
		c.Steps[i] = st.clone()
	}
	c.Artifacts = cloneArtifacts(s.Artifacts)
	c.StartedAt = clonePtr(s.StartedAt)
	c.CompletedAt = clonePtr(s.CompletedAt)
	c.TotalDurationMs = clonePtr(s.TotalDurationMs)
	c.EngineRunRef = slices.Clone(s.EngineRunRef)
	c.Error = clonePtr(s.Error)
	c.Input = slices.Clone(s.Input)
	c.Output = slices.Clone(s.Output)
	c.Queued = clonePtr(s.Queued)
	return c
}

// clone returns a deep copy of s with a non-nil Artifacts slice.
func (s StepSnapshot) clone() StepSnapshot {
	c := s
	c.StartedAt = clonePtr(s.StartedAt)
	c.CompletedAt = clonePtr(s.CompletedAt)
	c.Artifacts = cloneArtifacts(s.Artifacts)
	c.Error = clonePtr(s.Error)
	c.ForEach = clonePtr(s.ForEach)
	return c
}

// cloneArtifacts copies a into a new, non-nil slice with no spare capacity.
func cloneArtifacts(a []ArtifactRef) []ArtifactRef {
	return append(make([]ArtifactRef, 0, len(a)), a...)
}

// clonePtr returns a pointer to a copy of *p, or nil for nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
