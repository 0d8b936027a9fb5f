package decide

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/weftrun/weft/pkg/events"
)

// This file holds the payloads the decider writes that pkg/events has no
// type for. They are persisted, so their JSON names never change.

// stepScheduledData is the payload of StepScheduled: events'
// StepScheduledData plus the deadline of a waitSignal step's wait, which
// lets State re-arm the timeout timer.
type stepScheduledData struct {
	events.StepScheduledData
	// Deadline is when a waitSignal step times out; zero (omitted) for
	// activity steps and waits without a timeout.
	Deadline time.Time `json:"deadline,omitzero"`
}

// stepStartedData is the payload of StepStarted: events' StepStartedData
// plus the activity-level idempotency key the worker reported for a keyed
// attempt, which the engine needs to write the attempt's reconciliation
// record if the run is cancelled while it is in flight. Written only with
// a key; without one the payload is events' StepStartedData.
type stepStartedData struct {
	events.StepStartedData
	ActivityKey string `json:"activityKey,omitempty"`
}

// stepCompletedData is the payload of StepCompleted: events'
// StepCompletedData plus how a reconciled result was obtained
// (task.ReconciledByRecord or task.ReconciledByVerify) when the activity
// did not run. Written only for a reconciled result.
type stepCompletedData struct {
	events.StepCompletedData
	ReconciledBy string `json:"reconciledBy,omitempty"`
}

// stepSkippedData is the payload of StepSkipped: events'
// StepSkippedData plus, for a step skipped because a condition was false,
// the step whose condition it was (the step itself, or an ancestor it was
// skipped with). Written only for such a skip; RETRY_STEP brings back the
// steps a failure skipped, never these.
type stepSkippedData struct {
	events.StepSkippedData
	Condition string `json:"condition,omitempty"`
}

// runApprovedData is what the state reads of RunApproved's payload: the
// run's identity and input, without its plan.
type runApprovedData struct {
	TenantID      string            `json:"tenantId"`
	ProjectID     string            `json:"projectId"`
	EnvironmentID string            `json:"environmentId"`
	PlanID        string            `json:"planId"`
	Priority      int               `json:"priority,omitempty"`
	Input         json.RawMessage   `json:"input,omitempty"`
	Parent        *events.RunParent `json:"parent,omitempty"`
	RerunOf       *events.RerunOf   `json:"rerunOf,omitempty"`
}

// startedOf returns the StepStarted payload in data, as the log or the
// decider gives it.
func startedOf(data any) stepStartedData {
	switch d := data.(type) {
	case stepStartedData:
		return d
	case events.StepStartedData:
		return stepStartedData{StepStartedData: d}
	default:
		return stepStartedData{}
	}
}

// completedOf returns the StepCompleted payload in data, as the log or
// the decider gives it.
func completedOf(data any) events.StepCompletedData {
	switch d := data.(type) {
	case events.StepCompletedData:
		return d
	case stepCompletedData:
		return d.StepCompletedData
	default:
		return events.StepCompletedData{}
	}
}

// compactJSON returns doc as compact JSON text, without HTML escaping, so
// a document folded from the log and the same document as the decider
// emitted it give the same text; empty for none or JSON null.
func compactJSON(doc json.RawMessage) string {
	if len(doc) == 0 {
		return ""
	}
	if !bytes.ContainsAny(doc, " \t\r\n") { // compact already, if it is JSON
		if !json.Valid(doc) || string(doc) == "null" {
			return ""
		}
		return string(doc)
	}
	var b bytes.Buffer
	b.Grow(len(doc))
	if json.Compact(&b, doc) != nil {
		return ""
	}
	if s := b.String(); s != "null" {
		return s
	}
	return ""
}

// artifactsJSON returns the artifacts as JSON text; empty for none.
func artifactsJSON(refs []events.ArtifactRef) string {
	if len(refs) == 0 {
		return ""
	}
	b, err := json.Marshal(refs)
	if err != nil {
		return ""
	}
	return compactJSON(b)
}
