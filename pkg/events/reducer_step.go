package events

import (
	"cmp"
	"strconv"
	"strings"
	"time"
)

// stepPayload holds the decoded payload of a step event; only the field of
// the event's type is set.
type stepPayload struct {
	scheduled struct {
		ForEach    *ForEachData `json:"forEach"`
		ChildRunID string       `json:"childRunId"`
	}
	completed StepCompletedData
	failed    StepFailedData
	skipped   StepSkippedData
	retry     StepRetryScheduledData
}

// applyStep applies a step event. Rules:
//
//   - A step is created, PENDING, by the first event that names it, and
//     keeps its place in Steps.
//   - The event's logicalAttemptId is compared with the step's (as
//     decimal numbers; see compareAttempt). An event of an older attempt is
//     ignored. An event of a newer attempt first starts a fresh attempt:
//     PENDING, with the previous attempt's engineAttemptId, startedAt,
//     completedAt, artifacts and error cleared. An empty logicalAttemptId
//     means the current attempt.
//   - StepScheduled: nothing more (it only creates the step or attempt),
//     but that one with forEach records the fan-out in ForEach, which
//     later attempts of the step keep.
//   - StepStarted: attempts+1, startedAt if unset, engineAttemptId raised to
//     the event's; a PENDING step becomes RUNNING and drops the error kept
//     from a retried attempt. A late StepStarted (one delivered through the
//     outbox after the outcome) does not reopen a finished attempt.
//   - StepCompleted, StepFailed, StepSkipped set the attempt's outcome and
//     completedAt, unless it already has one: the first outcome wins.
//     StepCompleted records the artifacts and clears the error; StepFailed
//     records the error; StepSkipped records {Code: CodeSkipped, Message:
//     reason}.
//   - StepRetryScheduled starts attempt nextLogicalAttemptId when that is
//     newer, and leaves the step PENDING with the failed attempt's error. A
//     StepRetryScheduled that names no newer attempt does not reopen a
//     finished attempt.
func (p *projection) applyStep(e Event) error {
	if e.StepID == "" {
		return e.malformed(errMissingStepID)
	}
	d, err := decodeStepPayload(e)
	if err != nil {
		return err
	}
	st := p.step(e.StepID, e.LogicalAttemptID)
	if e.LogicalAttemptID != "" {
		switch c := compareAttempt(e.LogicalAttemptID, st.LogicalAttemptID); {
		case c < 0:
			return nil // stale: an older logical attempt
		case c > 0:
			st.newAttempt(e.LogicalAttemptID)
		}
	}
	at := eventTime(e)
	switch e.EventType {
	case StepStarted:
		st.started(e, StartedTime(e))
	case StepCompleted:
		if st.finish(e, at, StepStatusSuccess, nil) {
			st.Artifacts = cloneArtifacts(d.completed.Artifacts)
			st.ReusedFrom = clonePtr(d.completed.ReusedFrom)
		}
	case StepFailed:
		st.finish(e, at, StepStatusFailed, &d.failed.Error)
	case StepSkipped:
		if st.finish(e, at, StepStatusSkipped, &StepError{Code: CodeSkipped, Message: d.skipped.Reason}) {
			st.ReusedFrom = clonePtr(d.skipped.ReusedFrom)
		}
	case StepRetryScheduled:
		st.retry(d.retry)
	default: // StepScheduled: creating the step or attempt above, and a fan-out
		if f := d.scheduled.ForEach; f != nil {
			st.ForEach = &ForEachProgress{ForEachData: *f}
		}
		if d.scheduled.ChildRunID != "" {
			st.ChildRunID = d.scheduled.ChildRunID
		}
	}
	return nil
}

// decodeStepPayload decodes the payload of the step event types whose data
// the reducer reads.
func decodeStepPayload(e Event) (stepPayload, error) {
	var d stepPayload
	var err error
	switch e.EventType {
	case StepScheduled:
		err = e.Data(&d.scheduled)
	case StepCompleted:
		err = e.Data(&d.completed)
	case StepFailed:
		err = e.Data(&d.failed)
	case StepSkipped:
		err = e.Data(&d.skipped)
	case StepRetryScheduled:
		err = e.Data(&d.retry)
	default: // StepStarted payloads are not recorded
	}
	return d, err
}

// step returns the step with id stepID, appending a PENDING one at
// logicalAttemptID if there is none. The pointer is valid until the next
// call.
func (p *projection) step(stepID, logicalAttemptID string) *StepSnapshot {
	if i, ok := p.steps[stepID]; ok {
		return &p.s.Steps[i]
	}
	p.steps[stepID] = len(p.s.Steps)
	p.s.Steps = append(p.s.Steps, StepSnapshot{
		StepID:           stepID,
		Status:           StepStatusPending,
		LogicalAttemptID: logicalAttemptID,
		Artifacts:        []ArtifactRef{},
	})
	return &p.s.Steps[len(p.s.Steps)-1]
}

// newAttempt resets st to a fresh, PENDING logical attempt id. Attempts is
// kept: it counts starts over the step's whole life; so is ForEach: a
// forEach step's new attempt reruns the children that failed.
func (st *StepSnapshot) newAttempt(id string) {
	*st = StepSnapshot{
		StepID:           st.StepID,
		Status:           StepStatusPending,
		LogicalAttemptID: id,
		Artifacts:        []ArtifactRef{},
		Attempts:         st.Attempts,
		ForEach:          st.ForEach,
	}
}

// started applies StepStarted within the current attempt.
func (st *StepSnapshot) started(e Event, at time.Time) {
	st.Attempts++
	st.raiseEngineAttempt(e.EngineAttemptID)
	if st.StartedAt == nil {
		st.StartedAt = timePtr(at)
	}
	if st.Status == StepStatusPending {
		st.Status = StepStatusRunning
		st.Error = nil
	}
}

// finish records the attempt's outcome unless it already has one, and
// reports whether it did.
func (st *StepSnapshot) finish(e Event, at time.Time, status StepStatus, cause *StepError) bool {
	if st.Status.Terminal() {
		return false
	}
	st.raiseEngineAttempt(e.EngineAttemptID)
	st.Status = status
	st.CompletedAt = timePtr(at)
	st.Error = clonePtr(cause)
	return true
}

// retry applies StepRetryScheduled.
func (st *StepSnapshot) retry(d StepRetryScheduledData) {
	if compareAttempt(d.NextLogicalAttemptID, st.LogicalAttemptID) > 0 {
		st.newAttempt(d.NextLogicalAttemptID)
	} else if st.Status.Terminal() {
		return
	}
	st.Status = StepStatusPending
	st.Error = clonePtr(&d.Error)
}

// raiseEngineAttempt records id as the engine attempt if it is newer than
// the one recorded.
func (st *StepSnapshot) raiseEngineAttempt(id string) {
	if compareAttempt(id, st.EngineAttemptID) > 0 {
		st.EngineAttemptID = id
	}
}

// compareAttempt orders attempt ids: numerically when both are decimal
// integers, otherwise shorter first and then bytewise, which agrees with
// numeric order for decimals without leading zeros and puts "" first.
func compareAttempt(a, b string) int {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA == nil && errB == nil {
		return cmp.Compare(x, y)
	}
	return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
}
