package events

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"
)

// StepDetail is what a step's events record beyond its StepSnapshot: the
// input it ran with, its output, why it was skipped, and the history of
// its attempts. StepDetails builds it from the log. It is not part of the
// snapshot, so that the snapshot stays small: a forEach step's thousands
// of children keep their inputs and outputs in the log, and a reader asks
// for one step's detail when it shows that step.
type StepDetail struct {
	StepID string `json:"stepId"`
	// Input is the input of the step's latest scheduled attempt: the
	// resolved input its StepScheduled recorded (InputSource
	// InputResolved; the evaluated list of a forEach step), or, when that
	// recorded none, the plan step's static input (InputPlan). Absent for
	// a step that was never scheduled or started.
	Input       json.RawMessage `json:"input,omitempty"`
	InputSource string          `json:"inputSource,omitempty"`
	// Output is the output of the latest attempt, once it completed.
	Output json.RawMessage `json:"output,omitempty"`
	// Skip says why the step was skipped; nil unless it was.
	Skip *StepSkip `json:"skip,omitempty"`
	// ForEach is the fan-out of a forEach step.
	ForEach *ForEachData `json:"forEach,omitempty"`
	// Attempts are the step's logical attempts, oldest first.
	Attempts []StepAttempt `json:"attempts"`
}

// Where StepDetail.Input comes from.
const (
	InputResolved = "resolved"
	InputPlan     = "plan"
)

// StepSkip is the payload of a StepSkipped: its reason (plan's
// CONDITION_FALSE for a condition that was false) and, for a skip a
// condition caused, the step whose condition it was.
type StepSkip struct {
	Reason    string `json:"reason"`
	Condition string `json:"condition,omitempty"`
}

// StepAttempt is one logical attempt of a step, from its events.
type StepAttempt struct {
	LogicalAttemptID string `json:"logicalAttemptId"`
	// EngineAttemptID is the highest platform attempt (delivery) seen.
	EngineAttemptID string     `json:"engineAttemptId,omitempty"`
	Status          StepStatus `json:"status"`
	ScheduledAt     *time.Time `json:"scheduledAt,omitempty"`
	// StartedAt is the first start; Deliveries counts the starts.
	StartedAt   *time.Time `json:"startedAt,omitempty"`
	Deliveries  int        `json:"deliveries"`
	CompletedAt *time.Time `json:"completedAt,omitempty"`
	// WorkerID is the worker of the latest start that named one.
	WorkerID string `json:"workerId,omitempty"`
	// Error is why the attempt failed (or was cancelled).
	Error *StepError `json:"error,omitempty"`
	// RetryAt is when the next attempt was to be scheduled, for an
	// attempt whose failure was retried.
	RetryAt *time.Time `json:"retryAt,omitempty"`
}

// stepTrace is the working state of one step's detail.
type stepTrace struct {
	d        StepDetail
	inputs   map[string]json.RawMessage // by logical attempt; nil: none recorded
	outputs  map[string]json.RawMessage
	attempts map[string]*StepAttempt
}

// stepEvent is what StepDetails decodes of a step event's payload.
type stepEvent struct {
	Input     json.RawMessage `json:"input"`
	ForEach   *ForEachData    `json:"forEach"`
	Output    json.RawMessage `json:"output"`
	WorkerID  string          `json:"workerId"`
	Error     *StepError      `json:"error"`
	Reason    string          `json:"reason"`
	Condition string          `json:"condition"`
	RetryAt   time.Time       `json:"retryAt"`
	StartedAt time.Time       `json:"startedAt"`
}

// StepDetails returns the detail of every step the events name, keyed by
// step id. evs are a run's events in runSeq order, or any subsequence of
// them that holds every event of the steps of interest plus the run's
// RunApproved (for the plan's static inputs) and RunCancelled (which ends
// open attempts CANCELLED); other events are ignored. An attempt's first
// outcome wins, as in the reducer. A payload that does not decode yields a
// *MalformedEventError.
func StepDetails(evs []Event) (map[string]*StepDetail, error) {
	traces := map[string]*stepTrace{}
	var plan json.RawMessage
	for _, e := range evs {
		switch {
		case e.EventType == RunApproved:
			var d struct {
				Plan json.RawMessage `json:"plan"`
			}
			if err := e.Data(&d); err != nil {
				return nil, err
			}
			plan = d.Plan
		case e.EventType == RunCancelled:
			var d RunCancelledData
			if err := e.Data(&d); err != nil {
				return nil, err
			}
			for _, t := range traces {
				t.cancel(eventTime(e), d.Reason)
			}
		case e.StepID != "" && e.EventType.stepLevel():
			var d stepEvent
			if err := e.Data(&d); err != nil {
				return nil, err
			}
			t := traces[e.StepID]
			if t == nil {
				t = &stepTrace{d: StepDetail{StepID: e.StepID}, inputs: map[string]json.RawMessage{},
					outputs: map[string]json.RawMessage{}, attempts: map[string]*StepAttempt{}}
				traces[e.StepID] = t
			}
			t.apply(e, d)
		}
	}
	static := planInputs(plan)
	out := make(map[string]*StepDetail, len(traces))
	for id, t := range traces {
		out[id] = t.finish(static[id])
	}
	return out, nil
}

// stepLevel reports whether t is one of the step event types.
func (t Type) stepLevel() bool {
	switch t {
	case StepScheduled, StepStarted, StepCompleted, StepFailed, StepSkipped, StepRetryScheduled:
		return true
	default:
		return false
	}
}

// apply records one step event.
func (t *stepTrace) apply(e Event, d stepEvent) {
	at := eventTime(e)
	if e.EventType == StepSkipped {
		t.d.Skip = &StepSkip{Reason: d.Reason, Condition: d.Condition}
	}
	a := t.attempt(e.LogicalAttemptID)
	if compareAttempt(e.EngineAttemptID, a.EngineAttemptID) > 0 {
		a.EngineAttemptID = e.EngineAttemptID
	}
	switch e.EventType {
	case StepScheduled:
		a.ScheduledAt = timePtr(at)
		t.inputs[a.LogicalAttemptID] = d.Input
		t.d.ForEach = cmp.Or(d.ForEach, t.d.ForEach)
	case StepStarted:
		a.Deliveries++
		a.StartedAt = cmp.Or(a.StartedAt, timePtr(cmp.Or(d.StartedAt, at))) // as StartedTime, the payload decoded once
		a.WorkerID = cmp.Or(d.WorkerID, a.WorkerID)
		if a.Status == StepStatusPending {
			a.Status = StepStatusRunning
		}
	case StepCompleted:
		if a.end(at, StepStatusSuccess, nil) {
			t.outputs[a.LogicalAttemptID] = d.Output
		}
	case StepFailed:
		a.end(at, StepStatusFailed, d.Error)
	case StepRetryScheduled:
		a.end(at, StepStatusFailed, d.Error)
		if !d.RetryAt.IsZero() {
			a.RetryAt = timePtr(d.RetryAt)
		}
	case StepSkipped:
		a.end(at, StepStatusSkipped, nil)
	default: // StepDetails passes step events only
	}
}

// attempt returns logical attempt id, adding it PENDING the first time.
// An empty id (an event that names none) is the latest attempt.
func (t *stepTrace) attempt(id string) *StepAttempt {
	if id == "" {
		var last *StepAttempt
		for _, a := range t.attempts {
			if last == nil || compareAttempt(a.LogicalAttemptID, last.LogicalAttemptID) > 0 {
				last = a
			}
		}
		if last != nil {
			return last
		}
	}
	a, ok := t.attempts[id]
	if !ok {
		a = &StepAttempt{LogicalAttemptID: id, Status: StepStatusPending}
		t.attempts[id] = a
	}
	return a
}

// end gives a its outcome unless it has one, and reports whether it did.
func (a *StepAttempt) end(at time.Time, status StepStatus, cause *StepError) bool {
	if a.Status.Terminal() {
		return false
	}
	a.Status, a.CompletedAt, a.Error = status, timePtr(at), clonePtr(cause)
	return true
}

// cancel ends the attempts still open as the reducer's RunCancelled does.
func (t *stepTrace) cancel(at time.Time, reason string) {
	for _, a := range t.attempts {
		a.end(at, StepStatusCancelled, &StepError{Code: CodeCancelled, Message: reason})
	}
}

// finish orders the attempts and picks the latest attempt's input (static
// when it recorded none) and output.
func (t *stepTrace) finish(static json.RawMessage) *StepDetail {
	d := t.d
	d.Attempts = make([]StepAttempt, 0, len(t.attempts))
	for _, a := range t.attempts {
		d.Attempts = append(d.Attempts, *a)
	}
	slices.SortFunc(d.Attempts, func(a, b StepAttempt) int {
		return compareAttempt(a.LogicalAttemptID, b.LogicalAttemptID)
	})
	if n := len(d.Attempts); n > 1 || (n == 1 && d.Attempts[0].Status != StepStatusSkipped) {
		last := d.Attempts[n-1].LogicalAttemptID
		d.Output = t.outputs[last]
		switch {
		case len(t.inputs[last]) > 0:
			d.Input, d.InputSource = t.inputs[last], InputResolved
		case len(static) > 0:
			d.Input, d.InputSource = static, InputPlan
		}
	}
	return &d
}

// planInputs reads the static input of each step of a persisted plan; nil
// when the plan cannot be read.
func planInputs(plan json.RawMessage) map[string]json.RawMessage {
	var p struct {
		Steps []struct {
			ID    string          `json:"id"`
			Input json.RawMessage `json:"input"`
		} `json:"steps"`
	}
	if len(plan) == 0 || json.Unmarshal(plan, &p) != nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(p.Steps))
	for _, s := range p.Steps {
		out[s.ID] = s.Input
	}
	return out
}
