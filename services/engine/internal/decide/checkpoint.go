package decide

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// CheckpointFormat is the format version of the checkpoint record this
// build writes. It reads every format from 1 up to it; a record of a newer
// format is not restorable (ErrCheckpoint), and its run is folded from
// runSeq 1 instead (docs/checkpoints.md).
const CheckpointFormat = 1

// ErrCheckpoint reports a checkpoint record RestoreCheckpoint cannot turn
// into a State: a format newer than CheckpointFormat, a record that does
// not decode, or one that does not fit the plan. The caller folds the run
// from its first event instead; a checkpoint is an optimisation, never
// the source of truth.
var ErrCheckpoint = errors.New("decide: checkpoint not restorable")

// checkpointRecord is the persisted form of a State (format 1). It is
// compacted: a step still in its initial state (PENDING, attempt 1, never
// scheduled) is left out, and so is every zero field. Its JSON names never
// change (docs/persisted-format.md).
type checkpointRecord struct {
	Format         int                       `json:"format"`
	RunID          string                    `json:"runId"`
	PlanVersion    string                    `json:"planVersion"`
	Head           int64                     `json:"head"`
	Status         events.RunStatus          `json:"status"`
	Pauses         int                       `json:"pauses,omitzero"`
	Resumes        int                       `json:"resumes,omitzero"`
	Failures       int                       `json:"failures,omitzero"`
	SignalsApplied int                       `json:"signalsApplied,omitzero"`
	Queued         bool                      `json:"queued,omitzero"`
	DelayedUntil   time.Time                 `json:"delayedUntil,omitzero"`
	Steps          map[string]checkpointStep `json:"steps,omitempty"`
	Signals        []checkpointRef           `json:"signals,omitempty"`
	Pending        []checkpointSignal        `json:"pending,omitempty"`
	Buffered       []checkpointSignal        `json:"buffered,omitempty"`
	Run            checkpointRun             `json:"run,omitzero"`
	ChildEnds      []checkpointChildEnd      `json:"childEnds,omitempty"`
}

// checkpointChildEnd is a ChildEnded of State.ChildEnds.
type checkpointChildEnd struct {
	StepID         string                   `json:"stepId"`
	LogicalAttempt int                      `json:"logicalAttempt"`
	Data           events.ChildRunEndedData `json:"data"`
}

// checkpointRun is a RunInfo as a checkpoint records it.
type checkpointRun struct {
	TenantID      string    `json:"tenantId,omitempty"`
	ProjectID     string    `json:"projectId,omitempty"`
	EnvironmentID string    `json:"environmentId,omitempty"`
	PlanID        string    `json:"planId,omitempty"`
	Priority      int       `json:"priority,omitempty"`
	Input         string    `json:"input,omitempty"`
	StartedAt     time.Time `json:"startedAt,omitzero"`
	// Parent is a child run's link to its parent's subPlan step.
	Parent events.RunParent `json:"parent,omitzero"`
	// Rerun is a rerun's source.
	Rerun *events.RerunOf `json:"rerunOf,omitempty"`
}

// checkpointStep is a StepState that left its initial state. It has
// StepState's fields in StepState's order, so that a field added to
// StepState stops the conversions here from compiling until the record
// has it too.
type checkpointStep struct {
	Status             events.StepStatus `json:"status"`
	Attempt            int               `json:"attempt"`
	Scheduled          bool              `json:"scheduled,omitzero"`
	EngineAttemptID    string            `json:"engineAttemptId,omitempty"`
	RetryAt            time.Time         `json:"retryAt,omitzero"`
	SeriesStart        int               `json:"seriesStart"`
	Deadline           time.Time         `json:"deadline,omitzero"`
	Error              events.StepError  `json:"error,omitzero"`
	ScheduledAt        time.Time         `json:"scheduledAt,omitzero"`
	StartedAt          time.Time         `json:"startedAt,omitzero"`
	ActivityKey        string            `json:"activityKey,omitempty"`
	Input              string            `json:"input,omitempty"`
	Output             string            `json:"output,omitempty"`
	Artifacts          string            `json:"artifacts,omitempty"`
	SkippedByCondition string            `json:"skippedByCondition,omitempty"`
	ChildRunID         string            `json:"childRunId,omitempty"`
}

// checkpointRef is a SignalRef as a checkpoint records it.
type checkpointRef struct {
	Name string `json:"name"`
	ID   string `json:"id"`
}

// checkpointSignal is a pending or buffered signal. The payload is kept
// as the exact JSON text the log holds, in a string, so that restoring it
// gives the same bytes a fold of the log gives.
type checkpointSignal struct {
	SignalID string `json:"signalId"`
	Name     string `json:"name"`
	Payload  string `json:"payload,omitempty"`
	EventID  string `json:"eventId,omitempty"`
}

// MarshalCheckpoint encodes s, the state of a run of p, as a checkpoint
// record of format CheckpointFormat. RestoreCheckpoint(p, data) gives back
// a State equal to s, field for field, so a run restored from it and then
// folded on from s.Head+1 is the run folded from runSeq 1. It refuses a
// state that applied no event (Head 0).
func MarshalCheckpoint(p *plan.Plan, s State) ([]byte, error) {
	if s.Head < 1 || s.RunID == "" {
		return nil, fmt.Errorf("decide: checkpoint of a run with no events (head %d)", s.Head)
	}
	rec := checkpointRecord{
		Format: CheckpointFormat, RunID: s.RunID, PlanVersion: p.PlanVersion, Head: s.Head, Status: s.Status,
		Pauses: s.Pauses, Resumes: s.Resumes, Failures: s.Failures, SignalsApplied: s.SignalsApplied,
		Queued: s.Queued, DelayedUntil: s.DelayedUntil,
		Pending: signalsOut(s.Pending), Buffered: signalsOut(s.Buffered), Run: checkpointRun(s.Run),
	}
	for _, e := range s.ChildEnds {
		rec.ChildEnds = append(rec.ChildEnds, checkpointChildEnd{StepID: e.StepID, LogicalAttempt: e.LogicalAttempt, Data: e.ChildRunEndedData})
	}
	for id, st := range s.Steps {
		if st != initialStep() {
			rec.addStep(id, st)
		}
	}
	for parent, elems := range s.Elements {
		elems.each(func(i int, st StepState) { rec.addStep(events.ChildStepID(parent, i), st) })
	}
	for _, ref := range slices.SortedFunc(maps.Keys(s.Signals), compareRefs) {
		if s.Signals[ref] {
			rec.Signals = append(rec.Signals, checkpointRef(ref))
		}
	}
	return json.Marshal(rec)
}

// RestoreCheckpoint decodes a checkpoint record MarshalCheckpoint wrote
// for a run of p and returns its State. It fails with ErrCheckpoint (and
// no state) for a record of a format it does not know, of another plan
// version, naming a step p does not have, or that does not decode. Unknown
// JSON fields are ignored (a newer writer's additive fields).
func RestoreCheckpoint(p *plan.Plan, data []byte) (State, error) {
	var rec checkpointRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return State{}, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	if err := rec.check(p); err != nil {
		return State{}, err
	}
	s := NewState(p)
	s.RunID, s.Head, s.Status = rec.RunID, rec.Head, rec.Status
	s.Pauses, s.Resumes, s.Failures, s.SignalsApplied = rec.Pauses, rec.Resumes, rec.Failures, rec.SignalsApplied
	s.Queued, s.DelayedUntil = rec.Queued, rec.DelayedUntil
	for id, st := range rec.Steps {
		if _, ok := s.Steps[id]; ok {
			s.Steps[id] = StepState(st)
		} else if parent, i, ok := events.ParseChildStepID(id); ok {
			s.setElement(parent, i, StepState(st))
		}
	}
	for _, ref := range rec.Signals {
		s.Signals[SignalRef(ref)] = true
	}
	s.Pending, s.Buffered = signalsIn(rec.Pending), signalsIn(rec.Buffered)
	s.Run = RunInfo(rec.Run)
	for _, e := range rec.ChildEnds {
		s.ChildEnds = append(s.ChildEnds, ChildEnded{StepID: e.StepID, LogicalAttempt: e.LogicalAttempt, ChildRunEndedData: e.Data})
	}
	for i := range p.Steps {
		if id := p.Steps[i].ID; p.Steps[i].ForEach != "" && s.Steps[id].Scheduled {
			s.setFan(id, s.newFan(id, s.Steps[id].Input))
		}
	}
	return s, nil
}

// stepOf reports whether id is a step of p or an element of one of its
// forEach steps.
func stepOf(p *plan.Plan, id string) bool {
	if _, ok := p.Step(id); ok {
		return true
	}
	parent, _, ok := events.ParseChildStepID(id)
	ps, inPlan := p.Step(parent)
	return ok && inPlan && ps.ForEach != ""
}

// addStep records step id's state st.
func (rec *checkpointRecord) addStep(id string, st StepState) {
	if rec.Steps == nil {
		rec.Steps = map[string]checkpointStep{}
	}
	rec.Steps[id] = checkpointStep(st)
}

// check tells whether rec can be restored for a run of p.
func (rec *checkpointRecord) check(p *plan.Plan) error {
	switch {
	case rec.Format < 1 || rec.Format > CheckpointFormat:
		return fmt.Errorf("%w: format %d, this build reads 1 to %d", ErrCheckpoint, rec.Format, CheckpointFormat)
	case rec.RunID == "" || rec.Head < 1 || rec.Status == "":
		return fmt.Errorf("%w: no run id, head or status", ErrCheckpoint)
	case rec.PlanVersion != p.PlanVersion:
		return fmt.Errorf("%w: plan version %q, the run's is %q", ErrCheckpoint, rec.PlanVersion, p.PlanVersion)
	}
	for id, st := range rec.Steps {
		if !stepOf(p, id) || st.Attempt < 1 || st.SeriesStart < 1 {
			return fmt.Errorf("%w: step %q is not in the plan or has no attempt", ErrCheckpoint, id)
		}
	}
	return nil
}

// initialStep is the state NewState gives every step.
func initialStep() StepState {
	return StepState{Status: events.StepStatusPending, Attempt: 1, SeriesStart: 1}
}

func compareRefs(a, b SignalRef) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
}

func signalsOut(in []SignalAccepted) []checkpointSignal {
	var out []checkpointSignal
	for _, sa := range in {
		out = append(out, checkpointSignal{SignalID: sa.SignalID, Name: sa.Name, Payload: string(sa.Payload), EventID: sa.EventID})
	}
	return out
}

// signalsIn is the inverse of signalsOut; nil when there are none, as a
// fold leaves an emptied list (orNil).
func signalsIn(in []checkpointSignal) []SignalAccepted {
	var out []SignalAccepted
	for _, c := range in {
		sa := SignalAccepted{SignalID: c.SignalID, Name: c.Name, EventID: c.EventID}
		if c.Payload != "" {
			sa.Payload = json.RawMessage(c.Payload)
		}
		out = append(out, sa)
	}
	return out
}
