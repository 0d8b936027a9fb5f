package events

import (
	"encoding/json"
	"time"
)

// SchemaVersion is the version of the envelope this package writes. Readers
// accept any envelope whose version is at most SchemaVersion and ignore
// fields they do not know (additive evolution, state-store contract §6).
const SchemaVersion = 1

// Event is the canonical envelope of one entry in a run's event log. It
// carries every field of CanonicalEngineEvent in the state-store contract,
// with the contract's JSON names, plus SchemaVersion.
//
// RunSeq and PersistedAt are assigned by the append authority (the event
// log); writers leave them zero. Attempt ids are decimal strings, as in the
// contract: LogicalAttemptID is the business retry counter and is part of the
// idempotency key, EngineAttemptID is the platform redelivery counter and
// is not.
type Event struct {
	SchemaVersion    int             `json:"schemaVersion"`
	RunID            string          `json:"runId"`
	RunSeq           int64           `json:"runSeq"`
	EventID          string          `json:"eventId"`
	StepID           string          `json:"stepId,omitempty"`
	EngineAttemptID  string          `json:"engineAttemptId,omitempty"`
	LogicalAttemptID string          `json:"logicalAttemptId,omitempty"`
	EventType        Type            `json:"eventType"`
	EventData        json.RawMessage `json:"eventData,omitempty"`
	IdempotencyKey   string          `json:"idempotencyKey"`
	EmittedAt        time.Time       `json:"emittedAt"`
	PersistedAt      time.Time       `json:"persistedAt,omitzero"`
	AdapterVersion   string          `json:"adapterVersion,omitempty"`
	EngineRunRef     json.RawMessage `json:"engineRunRef,omitempty"`
	CausedBySignalID string          `json:"causedBySignalId,omitempty"`
	ParentEventID    string          `json:"parentEventId,omitempty"`
}
