package eventlog

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/events"
)

// RunTail names part of one run's log for EventsFetchTailsTx: its first
// event and every event after AfterSeq.
type RunTail struct {
	RunID string
	// AfterSeq is the last runSeq the caller already has the effect of (a
	// checkpoint's); 0 reads the whole run.
	AfterSeq int64
	// NoFirst leaves out the run's first event when AfterSeq is past it:
	// the caller has it already.
	NoFirst bool
}

// fetchTailsSQL reads, per run, runSeq 1 (unless no_first) and the events
// after after_seq, each part by the primary key (run_id, run_seq).
const fetchTailsSQL = `SELECT ` + eventColumns + `
FROM unnest($1::uuid[], $2::bigint[], $3::boolean[]) AS t(tail_run, after_seq, no_first)
CROSS JOIN LATERAL (
    SELECT * FROM run_events WHERE run_id = t.tail_run AND run_seq > t.after_seq
    UNION ALL
    SELECT * FROM run_events WHERE run_id = t.tail_run AND run_seq = 1 AND t.after_seq > 0 AND NOT t.no_first
) AS e
ORDER BY run_id, run_seq`

// EventsFetchTailsTx returns, through q and in one query, the first event
// of each tail's run (its RunApproved, which carries the plan; not with
// NoFirst) followed by its events with runSeq > AfterSeq, keyed by run id and in ascending
// runSeq order; a run with no events has no key. A tail with AfterSeq 0
// reads the whole run, as EventsFetchRunsTx does. Each run id may appear
// once.
func (s *Store) EventsFetchTailsTx(ctx context.Context, q Querier, tails []RunTail) (map[string][]events.Event, error) {
	ids, after, noFirst, err := tailArgs(tails)
	if err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, fetchTailsSQL, ids, after, noFirst)
	if err != nil {
		return nil, fmt.Errorf("eventlog: fetch %d run tails: %w", len(tails), err)
	}
	out := make(map[string][]events.Event, len(tails))
	return out, collectTails(rows, out)
}

// EventsFetchTailsBatch queues on b the read EventsFetchTailsTx makes, for
// a caller that sends it in one round trip with other statements. The
// returned map is empty until b's results have been read; it then holds
// what EventsFetchTailsTx returns. A failed read is the error b's
// BatchResults.Close returns. An invalid run id fails the call and queues
// nothing.
func (s *Store) EventsFetchTailsBatch(b *pgx.Batch, tails []RunTail) (map[string][]events.Event, error) {
	ids, after, noFirst, err := tailArgs(tails)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]events.Event, len(tails))
	b.Queue(fetchTailsSQL, ids, after, noFirst).Query(func(rows pgx.Rows) error { return collectTails(rows, out) })
	return out, nil
}

// tailArgs checks tails and returns fetchTailsSQL's arguments.
func tailArgs(tails []RunTail) (ids []string, after []int64, noFirst []bool, err error) {
	ids, after, noFirst = make([]string, len(tails)), make([]int64, len(tails)), make([]bool, len(tails))
	for i, t := range tails {
		if err := checkRunID(t.RunID); err != nil {
			return nil, nil, nil, err
		}
		ids[i], after[i], noFirst[i] = t.RunID, max(t.AfterSeq, 0), t.NoFirst
	}
	return ids, after, noFirst, nil
}

// collectTails reads fetchTailsSQL's rows into out, by run.
func collectTails(rows pgx.Rows, out map[string][]events.Event) error {
	evs, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return fmt.Errorf("eventlog: fetch run tails: %w", err)
	}
	for _, ev := range evs {
		out[ev.RunID] = append(out[ev.RunID], ev)
	}
	return nil
}
