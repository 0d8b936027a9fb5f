package eventlog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weftrun/weft/pkg/events"
)

// appendNewSQL appends many runs' new events in one call
// (weft_events_append_new in 0010_events_append_new.sql).
const appendNewSQL = `SELECT weft_events_append_new($1, $2, $3, $4, $5, $6, $7, $8, $9,
	$10, $11, $12, $13, $14, $15, $16, $17)`

// EventsAppendNewBatch queues on b, as one statement, the append of parts
// whose events the caller knows to be new and numbered: every part has an
// ExpectedHead, and its events carry in RunSeq the runSeqs that follow it
// (a later part of the same run expects the head the earlier ones leave).
// It is the engine's append, which has read each run's head and decided
// from every event up to it; EventsAppendManyBatch is the general one, and
// costs two statements per event.
//
// The returned results, part by part, are set once b's results have been
// read: every event persisted, at the runSeq it carries, all at one
// persistedAt. If anything differs from what the caller predicted, nothing
// is written and the transaction is aborted; that is what b's
// BatchResults.Close returns: ErrConflict when a run's head is not the
// expected one, or an event's idempotency key is already in its run
// (nothing is deduplicated); ErrDuplicateEventID when an event id is
// already in the log. Events are validated, and the parts' numbering
// checked, before anything is queued; an error leaves b as it was. No
// events queues nothing.
func (s *Store) EventsAppendNewBatch(b *pgx.Batch, parts []RunAppend) ([][]AppendResult, error) {
	cols, err := s.newColumns(parts)
	if err != nil {
		return nil, err
	}
	out := make([][]AppendResult, len(parts))
	for p, part := range parts {
		out[p] = make([]AppendResult, len(part.Events))
	}
	if len(cols.runID) == 0 {
		return out, nil
	}
	b.Queue(appendNewSQL, cols.heads, cols.expected, cols.runID, cols.runSeq,
		cols.eventID, cols.stepID, cols.engineAttemptID, cols.logicalAttemptID, cols.eventType,
		cols.eventData, cols.key, cols.emittedAt, cols.adapterVersion, cols.engineRunRef,
		cols.causedBySignalID, cols.parentEventID, cols.schemaVersion).QueryRow(func(row pgx.Row) error {
		var at time.Time
		if err := row.Scan(&at); err != nil {
			return fmt.Errorf("eventlog: append %d new events of %d runs: %w", len(cols.runID), len(cols.heads), mapNewError(err))
		}
		for p, part := range parts {
			for i, ev := range part.Events {
				out[p][i] = AppendResult{RunSeq: ev.RunSeq, Persisted: true, PersistedAt: at.UTC()}
			}
		}
		return nil
	})
	return out, nil
}

// newColumns is weft_events_append_new's arguments: the runs' expected
// heads, in run id order (the order the heads are locked in), and the
// events' columns.
type newColumns struct {
	heads                            []string
	expected                         []int64
	runID, eventID, key              []string
	runSeq                           []int64
	stepID, engineAttemptID          []*string
	logicalAttemptID, adapterVersion []*string
	causedBySignalID, parentEventID  []*string
	eventType                        []string
	eventData, engineRunRef          []*string
	emittedAt                        []time.Time
	schemaVersion                    []int16
}

// newColumns validates parts as EventsAppendNewBatch requires them and
// lays them out as columns.
func (s *Store) newColumns(parts []RunAppend) (newColumns, error) {
	var c newColumns
	heads := map[string]int64{} // run → its head after the parts so far
	for p, part := range parts {
		if len(part.Events) == 0 {
			continue
		}
		run := part.Events[0].RunID
		head, seen := heads[run]
		switch {
		case part.ExpectedHead == nil:
			return newColumns{}, fmt.Errorf("%w: part %d (run %s) has no expected head", ErrInvalidEvent, p, run)
		case seen && *part.ExpectedHead != head:
			return newColumns{}, fmt.Errorf("%w: part %d expects run %s at %d, after earlier parts leave it at %d",
				ErrInvalidEvent, p, run, *part.ExpectedHead, head)
		case !seen:
			c.heads, c.expected = append(c.heads, run), append(c.expected, *part.ExpectedHead)
		}
		head = *part.ExpectedHead
		for i := range part.Events {
			ev := &part.Events[i]
			head++
			if err := s.addNew(&c, ev, run, head); err != nil {
				return newColumns{}, fmt.Errorf("%w (part %d, event %d)", err, p, i)
			}
		}
		heads[run] = head
	}
	sortHeads(&c)
	return c, nil
}

// addNew validates ev, the next event of run at runSeq seq, and appends
// its columns to c.
func (s *Store) addNew(c *newColumns, ev *events.Event, run string, seq int64) error {
	if ev.RunID != run {
		return fmt.Errorf("%w: one part holds runs %q and %q", ErrInvalidEvent, run, ev.RunID)
	}
	if ev.RunSeq != seq {
		return fmt.Errorf("%w: event %s of run %s is numbered %d, its runSeq is %d", ErrInvalidEvent, ev.EventID, run, ev.RunSeq, seq)
	}
	version, err := validate(ev, s.maxEventData)
	if err != nil {
		return err
	}
	c.runID, c.runSeq, c.eventID = append(c.runID, ev.RunID), append(c.runSeq, seq), append(c.eventID, ev.EventID)
	c.stepID, c.engineAttemptID = append(c.stepID, optText(ev.StepID)), append(c.engineAttemptID, optText(ev.EngineAttemptID))
	c.logicalAttemptID = append(c.logicalAttemptID, optText(ev.LogicalAttemptID))
	c.eventType, c.eventData = append(c.eventType, string(ev.EventType)), append(c.eventData, optJSON(ev.EventData))
	c.key, c.emittedAt = append(c.key, ev.IdempotencyKey), append(c.emittedAt, ev.EmittedAt)
	c.adapterVersion, c.engineRunRef = append(c.adapterVersion, optText(ev.AdapterVersion)), append(c.engineRunRef, optJSON(ev.EngineRunRef))
	c.causedBySignalID, c.parentEventID = append(c.causedBySignalID, optText(ev.CausedBySignalID)), append(c.parentEventID, optText(ev.ParentEventID))
	c.schemaVersion = append(c.schemaVersion, version)
	return nil
}

// sortHeads orders the heads by run id, so that concurrent batches lock
// the heads they share in the same order.
func sortHeads(c *newColumns) {
	type head struct {
		run      string
		expected int64
	}
	hs := make([]head, len(c.heads))
	for i := range hs {
		hs[i] = head{c.heads[i], c.expected[i]}
	}
	slices.SortFunc(hs, func(a, b head) int { return strings.Compare(a.run, b.run) })
	for i, h := range hs {
		c.heads[i], c.expected[i] = h.run, h.expected
	}
}

// mapNewError maps weft_events_append_new's refusals to the package's
// sentinels.
func mapNewError(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	switch {
	case pgErr.Code == "WE409":
		return fmt.Errorf("%w: %s", ErrConflict, pgErr.Message)
	case pgErr.Code == "23505" && isEventIDIndex(pgErr.ConstraintName):
		return fmt.Errorf("%w: %s", ErrDuplicateEventID, pgErr.Message)
	case pgErr.Code == "23505":
		return fmt.Errorf("%w: an event is already in the log: %s", ErrConflict, pgErr.Message)
	}
	return err
}

// optText is an optional text column: NULL when empty.
func optText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// optJSON is an optional jsonb column: NULL when absent.
func optJSON(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}
