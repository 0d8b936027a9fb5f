package events

import (
	"fmt"
	"time"

	"github.com/google/uuid"
)

// NewRunID returns a fresh run id: a UUIDv7 in canonical lowercase form.
// Its leading 48 bits are the creation time in Unix milliseconds, which is
// what the event log partitions on (docs/event-log.md).
func NewRunID() string { return uuid.Must(uuid.NewV7()).String() }

// RunIDFloor returns the smallest run id of a run created at t: t's Unix
// milliseconds in the first 48 bits, zeros after. Every run created before
// t has a smaller id, and every run created at or after t has an id at
// least this one, so a range of run ids is a range of creation times.
func RunIDFloor(t time.Time) string {
	var u uuid.UUID
	ms := uint64(max(0, t.UnixMilli()))
	for i := range 6 {
		u[i] = byte(ms >> (8 * (5 - i)))
	}
	return u.String()
}

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
