package decide

import (
	"fmt"

	"github.com/weftrun/weft/pkg/events"
)

// This file starts reruns (docs/api.md, "Rerun from a step"). A rerun's
// RunApproved names its source run and the steps it copies
// (events.RerunOf); the shell loads their source events into the start's
// input (Rerun), and the round that starts the run copies each outcome in
// right after RunStarted: a StepCompleted or StepSkipped marked
// reusedFrom, with no StepScheduled and no task. The steps left, the
// rerun's fromStepId and its descendants, then run as in any run.

// CodeReusedOutputGone fails a rerun at its start when an outcome it was
// to copy is no longer in its source run's log (the source's retention
// passed between the rerun's acceptance and its start).
const CodeReusedOutputGone = "REUSED_OUTPUT_GONE"

// Rerun is what the start of a rerun copies from its source run, loaded
// by the shell: the outcomes (ReusedOf), or, in Gone, why one of them can
// no longer be read. The zero Rerun copies nothing: any other run.
type Rerun struct {
	Reused []Reused
	Gone   string
}

// Reused is the outcome of one step a rerun copies: its StepCompleted or
// StepSkipped in the source run.
type Reused struct {
	stepID    string
	from      events.EventRef
	completed *events.StepCompletedData
	skipped   *stepSkippedData
}

// ReusedOf returns the outcome ev, a StepCompleted or StepSkipped of the
// source run, gives the rerun's step of the same id.
func ReusedOf(ev events.Event) (Reused, error) {
	r := Reused{stepID: ev.StepID, from: events.EventRef{RunID: ev.RunID, RunSeq: ev.RunSeq}}
	switch ev.EventType {
	case events.StepCompleted:
		var d events.StepCompletedData
		if err := ev.Data(&d); err != nil {
			return Reused{}, err
		}
		r.completed = &d
	case events.StepSkipped:
		var d stepSkippedData
		if err := ev.Data(&d); err != nil {
			return Reused{}, err
		}
		r.skipped = &d
	default:
		return Reused{}, fmt.Errorf("decide: run %s runSeq %d is a %s, not a step's outcome to reuse", ev.RunID, ev.RunSeq, ev.EventType)
	}
	return r, nil
}

// copyReused records, at a rerun's start, each outcome it copies, or,
// when one is gone, fails the run. It reports whether the run goes on.
func (d *decider) copyReused(r Rerun) bool {
	if r.Gone != "" {
		e := events.StepError{Code: CodeReusedOutputGone, Message: r.Gone}
		d.emit("", d.s.Failures+1, events.RunFailed, events.RunFailedData{Reason: "the rerun's start: " + e.Code, Error: &e}, "")
		return false
	}
	for _, u := range r.Reused {
		st, ok := d.s.Steps[u.stepID]
		if !ok || st.Status.Terminal() {
			continue
		}
		from := u.from
		if u.completed != nil {
			c := *u.completed
			c.ReusedFrom = &from
			if c.Artifacts == nil {
				c.Artifacts = []events.ArtifactRef{}
			}
			d.emit(u.stepID, st.Attempt, events.StepCompleted, c, "")
			continue
		}
		sk := *u.skipped
		sk.ReusedFrom = &from
		d.emit(u.stepID, st.Attempt, events.StepSkipped, sk, "")
	}
	return true
}
