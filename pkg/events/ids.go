package events

import (
	"fmt"

	"github.com/google/uuid"
)

// NewRunID returns a fresh run id: a UUIDv7 in canonical lowercase form.
// Its leading 48 bits are the creation time in Unix milliseconds, which is
// what the event log partitions on (docs/event-log.md).
func NewRunID() string { return uuid.Must(uuid.NewV7()).String() }

// NewEventID returns a fresh event id for an event of runID: a version-7
// UUID whose leading 48 bits are copied from the run id and whose other 74
// bits are random. Sharing the run id's prefix puts an event in the same
// log partition as its run, which is what lets the database enforce eventId
// uniqueness across the whole partitioned log (docs/event-log.md).
func NewEventID(runID string) (string, error) {
	run, err := uuid.Parse(runID)
	if err != nil {
		return "", fmt.Errorf("events: run id %q is not a UUID: %w", runID, err)
	}
	id := uuid.New()
	copy(id[:6], run[:6])
	id[6] = (id[6] & 0x0f) | 0x70 // version 7
	return id.String(), nil
}

// ParseRunID checks that s is a run id (a UUID in canonical lowercase form)
// and returns it. Ids in any other form are refused rather than normalised,
// so one run never has two spellings.
func ParseRunID(s string) (string, error) {
	id, err := uuid.Parse(s)
	if err != nil || id.String() != s {
		return "", fmt.Errorf("events: run id %q is not a canonical lowercase UUID", s)
	}
	return s, nil
}
