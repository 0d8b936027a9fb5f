package intake

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// runInfo is what intake needs of a run: its head, locked, and the owner
// and plan version its RunApproved names. A run that does not exist has
// no head and no owner.
type runInfo struct {
	head        int64
	locked      bool // the head row exists, and head is its head_seq
	tenant      string
	planVersion string
	// ended is the event that ended the run (RunCompleted, RunFailed,
	// RunCancelled), or "" while it has not ended (endedSQL).
	ended events.Type
	// plan is what the run's plan (in its RunApproved) says about the
	// signal; zero for a run whose RunApproved carries no plan.
	plan planFacts
}

// planFacts is what a run's plan says about one signal: the names its
// waitSignal steps wait for, in plan order and without repeats, and, for
// a RETRY_STEP, whether the plan has the step its payload names.
type planFacts struct {
	known     bool // the RunApproved carries the plan
	waits     []string
	stepKnown bool
}

// queueLockRuns queues on b the statement that locks the head rows of the
// runs ids, in run id order, until the transaction ends, so every
// acceptance of a run is decided in turn (engine rounds append under the
// same locks). Once b's results are read, the returned map holds the head
// of each run whose head row exists.
func queueLockRuns(b *pgx.Batch, ids []string) map[string]int64 {
	heads := make(map[string]int64, len(ids))
	b.Queue(`SELECT run_id::text, head_seq FROM run_heads WHERE run_id = ANY($1::uuid[]) ORDER BY run_id FOR UPDATE`,
		ids).Query(func(rows pgx.Rows) error {
		var id string
		var head int64
		_, err := pgx.ForEachRow(rows, []any{&id, &head}, func() error {
			heads[id] = head
			return nil
		})
		return err
	})
	return heads
}

// signalState is what the run's records say about one signal.
type signalState struct {
	existing *api.AcceptedSignalResult // the unexpired record of (run, name, id)
	recent   int                       // the run's acceptances within RateWindow
	oldest   time.Time                 // the oldest of those
	lastKey  string                    // the storage key of the signal's last payload in the log
	lastAt   time.Time                 // and its emittedAt (its acceptedAt)
	// lastExpires is that payload's expiresAt; zero in payloads written
	// before the field existed.
	lastExpires time.Time
}

// endedSQL is the event that ended run $1, or NULL while it has not
// ended. A run the engine holds (its engine_runs row: inserted with its
// RunApproved, deleted in the round that appends its end, inserted again
// with the RunResumed of a RETRY_STEP that reopens it) has not ended, and
// the log is not read; otherwise its last event among the ends and
// RunResumed says, so a run without that row whose log has no end (one
// approved outside internal/runstart) has not ended either. Read under
// the run's head lock, which the round that ends a run holds to append
// the end, it cannot change before the transaction commits.
const endedSQL = `
		CASE WHEN EXISTS (SELECT 1 FROM engine_runs WHERE run_id = $1) THEN NULL
		ELSE (SELECT event_type FROM run_events WHERE run_id = $1
		      AND event_type IN ('RunCompleted', 'RunFailed', 'RunCancelled', 'RunResumed')
		      ORDER BY run_seq DESC LIMIT 1) END`

// signalStateSQL reads the run's owner, plan version and what its plan
// says about the signal (its RunApproved: the waitSignal names, whether a
// step named $8 exists), whether it has ended (endedSQL), and the
// signal's state, in one statement: one plan for the lookups of the
// partitioned run_events, which Postgres plans at every execution.
const signalStateSQL = `
		SELECT a.event_data->>'tenantId', a.event_data->>'planVersion',
		       a.event_data->'plan' IS NOT NULL,
		       jsonb_path_query_array(a.event_data, '$.plan.steps[*] ? (@.kind == "waitSignal").signal ? (@.type() == "string")'),
		       coalesce(jsonb_path_exists(a.event_data, '$.plan.steps[*] ? (@.id == $id)', jsonb_build_object('id', $8::text)), false),
		       (` + endedSQL + `),
		       r.response, c.n, c.oldest, p.logical_attempt_id, p.emitted_at, p.expires_at
		FROM (SELECT count(*) AS n, min(accepted_at) AS oldest FROM signal_acceptances
		      WHERE run_id = $1 AND accepted_at > $5) c
		LEFT JOIN LATERAL (SELECT event_data FROM run_events
		      WHERE run_id = $1 AND run_seq = 1 AND event_type = 'RunApproved') a ON true
		LEFT JOIN LATERAL (SELECT response FROM signal_acceptances
		      WHERE run_id = $1 AND signal_name = $2 AND signal_id = $3 AND expires_at > $4) r ON true
		LEFT JOIN LATERAL (SELECT * FROM (SELECT run_seq, logical_attempt_id, emitted_at,
		                          (event_data->>'expiresAt')::timestamptz AS expires_at FROM run_events
		      WHERE run_id = $1 AND event_type = 'SignalAccepted'
		        AND logical_attempt_id COLLATE "C" >= $6 AND logical_attempt_id COLLATE "C" < $7
		      OFFSET 0) k ORDER BY run_seq DESC LIMIT 1) p ON true`

// queueSignalState queues on b the statement that reads the run of sig
// into run (its owner, its end, what its plan says of sig; stepID is the
// step a RETRY_STEP names, else "") and the state of sig, whose id is id,
// into st. It must be queued after queueLockRun's: a statement of its own
// takes its snapshot once the lock is held, so it sees every acceptance
// and every end committed before this one.
func queueSignalState(b *pgx.Batch, sig Signal, id, stepID string, now time.Time, run *runInfo, st *signalState) {
	prefix := signalKeyPrefix(sig.RunID, sig.Name, id)
	upper := prefix[:len(prefix)-1] + ";" // ':' + 1: the end of the prefix's range
	b.Queue(signalStateSQL, sig.RunID, sig.Name, id, now, now.Add(-RateWindow), prefix, upper, stepID).QueryRow(func(row pgx.Row) error {
		return scanSignalState(row, run, st)
	})
}

// scanSignalState reads queueSignalState's row. A run without a tenant in
// its RunApproved (one started outside the gateway), or without one,
// keeps an empty tenant, which matches no principal.
func scanSignalState(row pgx.Row, run *runInfo, st *signalState) error {
	var tenant, version, ended *string
	var waits []*string
	var response []byte
	var oldest, lastAt, lastExpires *time.Time
	var lastKey *string
	if err := row.Scan(&tenant, &version, &run.plan.known, &waits, &run.plan.stepKnown, &ended,
		&response, &st.recent, &oldest, &lastKey, &lastAt, &lastExpires); err != nil {
		return fmt.Errorf("read signal state: %w", err)
	}
	run.plan.waits = distinctNames(waits)
	if ended != nil && events.Type(*ended) != events.RunResumed {
		run.ended = events.Type(*ended)
	}
	if tenant != nil {
		run.tenant = *tenant
	}
	if version != nil {
		run.planVersion = *version
	}
	if response != nil {
		st.existing = new(api.AcceptedSignalResult)
		if err := json.Unmarshal(response, st.existing); err != nil {
			return fmt.Errorf("decode acceptance record: %w", err)
		}
	}
	if oldest != nil {
		st.oldest = *oldest
	}
	if lastKey != nil && lastAt != nil {
		st.lastKey, st.lastAt = *lastKey, *lastAt
	}
	if lastExpires != nil {
		st.lastExpires = *lastExpires
	}
	return nil
}

// now is the clock, in UTC and at Postgres's microsecond precision, so a
// time read back from a record equals the one first answered.
func (in *Intake) now() time.Time { return in.cfg.Now().UTC().Truncate(time.Microsecond) }

func containsNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

// distinctNames returns the strings of names, in order, without repeats
// and without the nulls and empty names a plan's JSON may hold.
func distinctNames(names []*string) []string {
	var out []string
	for _, n := range names {
		if n != nil && *n != "" && !slices.Contains(out, *n) {
			out = append(out, *n)
		}
	}
	return out
}
