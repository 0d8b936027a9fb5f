package decide

import (
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
