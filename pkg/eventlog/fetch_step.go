package eventlog

import (
	"context"
	"fmt"

	"github.com/weftrun/weft/pkg/events"
)

// fetchStepSQL reads one step's events and the run-level events a step's
// detail depends on (events.StepDetails): RunApproved, whose plan carries
// the step's static input, and RunCancelled, which ends open attempts.
//
// Index: the primary key (run_id, run_seq) bounds the scan to the run and
// yields its rows in runSeq order; step_id and event_type are filtered
// within it. The read therefore costs the run's events, not the step's:
// for a forEach run of 10,000 elements (some 40,000 events) each call
// reads them all on the server, though it returns only the step's few.
// An index on (run_id, step_id, run_seq) would make it cost the step's
// events, at the price of one more index write on every append; the
// schema has none today (pkg/schema).
const fetchStepSQL = `SELECT ` + eventColumns + `
FROM run_events
WHERE run_id = $1 AND (step_id = $2 OR event_type IN ('RunApproved', 'RunCancelled'))
ORDER BY run_seq
LIMIT $3`

// EventsFetchStep returns, in ascending runSeq order, the events of step
// stepID of the run together with the run's RunApproved and RunCancelled
// events: what events.StepDetails needs for that one step. A forEach
// child is a step of its own (events.ChildStepID), so a forEach step's
// events do not include its children's. At most limit events are
// returned; limit <= 0 means DefaultFetchLimit. Fields are filled in as
// EventsFetchAfter fills them. An unknown run or step has no events; a
// runID that is not a canonical UUID fails with ErrInvalidRunID.
func (s *Store) EventsFetchStep(ctx context.Context, runID, stepID string, limit int) ([]events.Event, error) {
	return s.EventsFetchStepTx(ctx, s.pool, runID, stepID, limit)
}

// EventsFetchStepTx is EventsFetchStep through q, typically the caller's
// transaction, so it sees the transaction's own appends.
func (s *Store) EventsFetchStepTx(ctx context.Context, q Querier, runID, stepID string, limit int) ([]events.Event, error) {
	if err := checkRunID(runID); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultFetchLimit
	}
	evs, err := queryEvents(ctx, q, fetchStepSQL, runID, stepID, limit)
	if err != nil {
		return nil, fmt.Errorf("eventlog: fetch step %s of run %s: %w", stepID, runID, err)
	}
	return evs, nil
}
