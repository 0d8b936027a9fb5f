package eventlog

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/google/uuid"

	"github.com/weftrun/weft/pkg/events"
)

// checkRunID refuses a run id that is not a canonical lowercase UUID.
func checkRunID(runID string) error {
	if _, err := events.ParseRunID(runID); err != nil {
		return fmt.Errorf("%w: %q is not a canonical lowercase UUID", ErrInvalidRunID, runID)
	}
	return nil
}

// checkUUID refuses an id that is not a canonical lowercase UUID, so one id
// never has two spellings in the log and on the bus.
func checkUUID(field, s string) error {
	if id, err := uuid.Parse(s); err != nil || id.String() != s {
		return fmt.Errorf("%w: %s %q is not a canonical lowercase UUID", ErrInvalidEvent, field, s)
	}
	return nil
}

// isKey reports whether s is an idempotency key: 64 lowercase hex digits.
func isKey(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// validate checks everything the log refuses and returns the event's
// schema version to store (0 means events.SchemaVersion). Errors wrap
// ErrInvalidEvent; RunSeq and PersistedAt are ignored (the log assigns them).
func validate(ev *events.Event, maxEventData int) (int16, error) {
	if len(ev.EventData) > maxEventData {
		return 0, fmt.Errorf("%w: eventData of %s is %d bytes, over the limit of %d (large results belong in artifacts)",
			ErrInvalidEvent, ev.EventType, len(ev.EventData), maxEventData)
	}
	if err := checkRunID(ev.RunID); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	if err := checkUUID("eventId", ev.EventID); err != nil {
		return 0, err
	}
	if ev.EventID[:13] != ev.RunID[:13] {
		return 0, fmt.Errorf("%w: eventId %s does not share the leading 48 bits of runId %s (use events.NewEventID)",
			ErrInvalidEvent, ev.EventID, ev.RunID)
	}
	if ev.ParentEventID != "" {
		if err := checkUUID("parentEventId", ev.ParentEventID); err != nil {
			return 0, err
		}
	}
	switch {
	case ev.EventType == "":
		return 0, fmt.Errorf("%w: eventType is empty", ErrInvalidEvent)
	case !isKey(ev.IdempotencyKey):
		return 0, fmt.Errorf("%w: idempotencyKey %q is not 64 lowercase hex digits", ErrInvalidEvent, ev.IdempotencyKey)
	case ev.EmittedAt.IsZero():
		return 0, fmt.Errorf("%w: emittedAt is zero", ErrInvalidEvent)
	case len(ev.EventData) > 0 && !json.Valid(ev.EventData):
		return 0, fmt.Errorf("%w: eventData is not valid JSON", ErrInvalidEvent)
	case len(ev.EngineRunRef) > 0 && !json.Valid(ev.EngineRunRef):
		return 0, fmt.Errorf("%w: engineRunRef is not valid JSON", ErrInvalidEvent)
	case ev.SchemaVersion < 0 || ev.SchemaVersion > math.MaxInt16:
		return 0, fmt.Errorf("%w: schemaVersion %d out of range", ErrInvalidEvent, ev.SchemaVersion)
	case ev.SchemaVersion == 0:
		return events.SchemaVersion, nil
	}
	return int16(ev.SchemaVersion), nil
}
