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

// Spec names a new event: what happened, to which run and step, in which
// logical attempt, under which plan version. New turns it into an Event.
type Spec struct {
	RunID            string
	StepID           string // empty for run-level events
	LogicalAttemptID string // empty for run-level events
	Type             Type
	PlanVersion      string
	// Data is encoded with MarshalData; nil means no payload.
	Data any
	// EmittedAt is when the event happened; zero means now.
	EmittedAt time.Time
	// EngineAttemptID is the platform's delivery count of the attempt a
	// step event reports, when known; it is not part of the key.
	EngineAttemptID string
	// CausedBySignalID and ParentEventID are copied as they are.
	CausedBySignalID string
	ParentEventID    string
}

// New returns the event s describes, ready to append: a fresh event id in
// the run's partition, the idempotency key of (run, step, logical attempt,
// type, plan version), EmittedAt now in UTC, and RunSeq and PersistedAt
// left for the append authority. It fails when RunID is not a UUID or Data
// cannot be encoded.
func New(s Spec) (Event, error) {
	id, err := NewEventID(s.RunID)
	if err != nil {
		return Event{}, err
	}
	data, err := MarshalData(s.Data)
	if err != nil {
		return Event{}, err
	}
	return Event{
		SchemaVersion:    SchemaVersion,
		RunID:            s.RunID,
		EventID:          id,
		StepID:           s.StepID,
		EngineAttemptID:  s.EngineAttemptID,
		LogicalAttemptID: s.LogicalAttemptID,
		EventType:        s.Type,
		EventData:        data,
		IdempotencyKey:   IdempotencyKey(s.RunID, s.StepID, s.LogicalAttemptID, s.Type, s.PlanVersion),
		EmittedAt:        emittedAt(s.EmittedAt),
		CausedBySignalID: s.CausedBySignalID,
		ParentEventID:    s.ParentEventID,
	}, nil
}

func emittedAt(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now().UTC()
	}
	return t.UTC()
}
