package eventlog

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/events"
)

// eventColumns is what scanEvent reads, in its order.
const eventColumns = `
       run_id::text, run_seq, event_id::text, coalesce(step_id, ''), coalesce(engine_attempt_id, ''),
       coalesce(logical_attempt_id, ''), event_type, event_data, idempotency_key, emitted_at,
       persisted_at, coalesce(adapter_version, ''), engine_run_ref, coalesce(caused_by_signal_id, ''),
       coalesce(parent_event_id::text, ''), schema_version`

const fetchSQL = `SELECT ` + eventColumns + `
FROM run_events
WHERE run_id = $1 AND run_seq > $2
ORDER BY run_seq
LIMIT $3`

// EventsFetchAfter returns up to limit events of the run with runSeq >
// afterSeq, in ascending runSeq order (the watermark read of the state-store
// contract §4); limit <= 0 means DefaultFetchLimit. RunSeq and PersistedAt
// are filled in, timestamps are in UTC, and JSON fields come back as Postgres
// normalised them (jsonb: key order and whitespace may differ from what was
// written). An unknown run has no events.
func (s *Store) EventsFetchAfter(ctx context.Context, runID string, afterSeq int64, limit int) ([]events.Event, error) {
	return s.EventsFetchAfterTx(ctx, s.pool, runID, afterSeq, limit)
}

// EventsFetchAfterTx is EventsFetchAfter through q, typically the caller's
// transaction, so it sees the transaction's own appends.
func (s *Store) EventsFetchAfterTx(ctx context.Context, q Querier, runID string, afterSeq int64, limit int) ([]events.Event, error) {
	if err := checkRunID(runID); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultFetchLimit
	}
	evs, err := queryEvents(ctx, q, fetchSQL, runID, afterSeq, limit)
	if err != nil {
		return nil, fmt.Errorf("eventlog: fetch run %s after %d: %w", runID, afterSeq, err)
	}
	return evs, nil
}

// queryEvents runs sql, which selects eventColumns, and scans its rows.
func queryEvents(ctx context.Context, q Querier, sql string, args ...any) ([]events.Event, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanEvent)
}

func scanEvent(row pgx.CollectableRow) (events.Event, error) {
	var ev events.Event
	var eventType string
	var data, ref []byte
	err := row.Scan(&ev.RunID, &ev.RunSeq, &ev.EventID, &ev.StepID, &ev.EngineAttemptID,
		&ev.LogicalAttemptID, &eventType, &data, &ev.IdempotencyKey, &ev.EmittedAt,
		&ev.PersistedAt, &ev.AdapterVersion, &ref, &ev.CausedBySignalID,
		&ev.ParentEventID, &ev.SchemaVersion)
	ev.EventType = events.Type(eventType)
	ev.EventData, ev.EngineRunRef = data, ref
	ev.EmittedAt, ev.PersistedAt = ev.EmittedAt.UTC(), ev.PersistedAt.UTC()
	return ev, err
}

const fetchRunsSQL = `SELECT ` + eventColumns + `
FROM run_events
WHERE run_id = ANY($1::uuid[])
ORDER BY run_id, run_seq`

// EventsFetchRunsTx returns every event of each of runIDs through q, in one
// query, keyed by run id and in ascending runSeq order; a run with no
// events has no key. It reads whole runs, so callers bound the number and
// size of the runs they ask for (the engine asks for one batch of rounds).
func (s *Store) EventsFetchRunsTx(ctx context.Context, q Querier, runIDs []string) (map[string][]events.Event, error) {
	for _, id := range runIDs {
		if err := checkRunID(id); err != nil {
			return nil, err
		}
	}
	evs, err := queryEvents(ctx, q, fetchRunsSQL, runIDs)
	if err != nil {
		return nil, fmt.Errorf("eventlog: fetch %d runs: %w", len(runIDs), err)
	}
	out := make(map[string][]events.Event, len(runIDs))
	for _, ev := range evs {
		out[ev.RunID] = append(out[ev.RunID], ev)
	}
	return out, nil
}

const fetchSeqsSQL = `SELECT ` + eventColumns + `
FROM run_events
WHERE run_id = $1 AND run_seq = ANY($2::bigint[])
ORDER BY run_seq`

// EventsFetchSeqsTx returns the events of the run at the runSeqs seqs,
// through q, in runSeq order, as EventsFetchAfter returns them; a runSeq
// the run does not hold (never, or no longer) is left out.
func (s *Store) EventsFetchSeqsTx(ctx context.Context, q Querier, runID string, seqs []int64) ([]events.Event, error) {
	if err := checkRunID(runID); err != nil {
		return nil, err
	}
	evs, err := queryEvents(ctx, q, fetchSeqsSQL, runID, seqs)
	if err != nil {
		return nil, fmt.Errorf("eventlog: fetch %d events of run %s: %w", len(seqs), runID, err)
	}
	return evs, nil
}
