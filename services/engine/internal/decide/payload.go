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
