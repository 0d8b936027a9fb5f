package round

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// Checkpoint rotation defaults (execution-semantics §6, history rotation):
// a round writes a new checkpoint of its run when this much history has
// accumulated since the last one.
const (
	// DefaultCheckpointSteps is how many ended step attempts (StepCompleted,
	// StepFailed, StepSkipped, StepRetryScheduled) trigger a checkpoint.
	DefaultCheckpointSteps = 50
	// DefaultCheckpointBytes is how many bytes of estimated event history
	// (HistoryBytes) trigger a checkpoint.
	DefaultCheckpointBytes = 1 << 20
)

// eventOverheadBytes is what HistoryBytes counts for an event's envelope
// (ids, key, type, timestamps) on top of its payload.
const eventOverheadBytes = 200

// HistoryBytes is the estimated size one event adds to a run's history:
// its eventData as stored plus a fixed eventOverheadBytes for the
// envelope. It is the measure of Config.CheckpointBytes.
func HistoryBytes(e events.Event) int { return len(e.EventData) + eventOverheadBytes }

// endsAttempt reports whether e ends a step's logical attempt: the unit
// of Config.CheckpointSteps.
func endsAttempt(e events.Event) bool {
	switch e.EventType {
	case events.StepCompleted, events.StepFailed, events.StepSkipped, events.StepRetryScheduled:
		return true
	default:
		return false
	}
}

// CheckpointUse reports how a round used its run's checkpoint.
type CheckpointUse struct {
	// Version is the run's checkpoint version the round read (0: the run
	// had no checkpoint row); under cas-required it is part of the
	// round's commit precondition.
	Version int64
	// Restored is the runSeq the round's state was restored from; 0 means
	// the state was folded from runSeq 1 (no usable checkpoint).
	Restored int64
	// Written is the checkpoint version the round's transaction wrote, 0
	// when it wrote none. Rounds of one run in one batch share it.
	Written int64
	// Warm reports that the round's state was this Runner's own, from its
	// last commit of the run (warm.go), and nothing was restored: Restored
	// is then the runSeq of the checkpoint its history is counted from.
	Warm bool
}

// CheckpointConflictError is the deterministic conflict of a round under
// cas-required ownership whose precondition failed: the run's head or its
// checkpoint version is no longer what the round read. errors.Is(err,
// eventlog.ErrConflict) holds, so the round rolls back, reloads and
// decides again, as for a head conflict of the append.
type CheckpointConflictError struct {
	RunID string
	// ExpectedHead is run_heads.head_seq as the round expects it at commit:
	// the head it loaded plus the events it appended. Head is the value
	// the database holds.
	ExpectedHead, Head int64
	// ExpectedVersion is run_checkpoints.checkpoint_version as the round
	// read it when it loaded the run (0: no row); Version is the value the
	// database holds (0: no row; -1: not read, because the conditional
	// write of a new checkpoint found the row changed).
	ExpectedVersion, Version int64
}

func (e *CheckpointConflictError) Error() string {
	return fmt.Sprintf("round: run %s moved under its owner: head %d (expected %d), checkpoint version %d (expected %d)",
		e.RunID, e.Head, e.ExpectedHead, e.Version, e.ExpectedVersion)
}

// Is makes errors.Is(err, eventlog.ErrConflict) true.
func (e *CheckpointConflictError) Is(target error) bool { return target == eventlog.ErrConflict }

// checkpointView is what a round knows of its run's checkpoint and of the
// history folded since.
type checkpointView struct {
	version  int64  // checkpoint_version read; 0: no row
	covered  int64  // covered_seq of a usable row; 0: none
	readOnly bool   // a row this build must not overwrite (a newer format)
	data     []byte // the row's record, until the run is restored
	steps    int    // ended attempts folded after covered (this batch's included)
	bytes    int    // HistoryBytes folded after covered (RunApproved excluded)
	written  int64  // the version this batch wrote
	warm     bool   // the state came from warm.go's cache
}

// use reports the view as a CheckpointUse.
func (v *checkpointView) use() CheckpointUse {
	return CheckpointUse{Version: v.version, Restored: v.covered, Written: v.written, Warm: v.warm}
}

// tally counts evs into the history since the checkpoint. RunApproved
// (runSeq 1) is read by every round for the plan, so it never counts.
func (v *checkpointView) tally(evs []events.Event) {
	for _, e := range evs {
		if e.RunSeq <= max(v.covered, 1) {
			continue
		}
		v.bytes += HistoryBytes(e)
		if endsAttempt(e) {
			v.steps++
		}
	}
}

// checkpointsSQL reads the checkpoint rows of runs. A row is usable when
// its format is one this build reads and it covers no more than the run's
// head; the record is read only then.
const checkpointsSQL = `
SELECT c.run_id::text, c.checkpoint_version, c.covered_seq, c.format_version > $2,
       CASE WHEN c.format_version <= $2 AND c.covered_seq <= h.head_seq THEN c.state END
FROM run_checkpoints c JOIN run_heads h ON h.run_id = c.run_id
WHERE c.run_id = ANY($1::uuid[])`

// queueCheckpoints queues on b the read of the checkpoint rows of ids and
// returns a view per id, filled in when b's results are read (a run
// without a row keeps the zero view).
func queueCheckpoints(b *pgx.Batch, ids []string) map[string]*checkpointView {
	out := make(map[string]*checkpointView, len(ids))
	for _, id := range ids {
		out[id] = &checkpointView{}
	}
	b.Queue(checkpointsSQL, ids, decide.CheckpointFormat).Query(func(rows pgx.Rows) error {
		var id string
		var v checkpointView
		_, err := pgx.ForEachRow(rows, []any{&id, &v.version, &v.covered, &v.readOnly, &v.data}, func() error {
			if v.data == nil {
				v.covered = 0
			}
			out[id] = &checkpointView{version: v.version, covered: v.covered, readOnly: v.readOnly, data: bytes.Clone(v.data)}
			return nil
		})
		if err != nil {
			return fmt.Errorf("round: read checkpoints: %w", err)
		}
		return nil
	})
	return out
}

// loadRuns reads the runs and restores each from its latest checkpoint
// and the events after it (and the RunApproved, for the plan). It reads
// the checkpoints and the events in one round trip, so it cannot wait for
// a checkpoint to say where its events start: it reads each run's events
// after the checkpoint this Runner last saw of the run (x.covered; from
// runSeq 1 for a run it has not seen), and drops those the checkpoint
// covers. Only a run whose checkpoint covers less than that (it was
// rewritten by a newer build, or the commit of the last one failed) costs
// a second read. A run without a usable checkpoint, or whose checkpoint
// does not restore (decide.ErrCheckpoint), is folded from runSeq 1, as
// before checkpoints existed. A warm run (warm.go) is restored from this
// Runner's last commit of it and the events after that, without its
// RunApproved.
func (x *Runner) loadRuns(ctx context.Context, tx pgx.Tx, ids []string) (map[string]*runView, error) {
	b := &pgx.Batch{}
	cps := queueCheckpoints(b, ids)
	warm := x.warmOf(ids)
	tails := make([]eventlog.RunTail, len(ids))
	for i, id := range ids {
		tails[i].RunID = id
		if w, ok := warm[id]; ok {
			tails[i].AfterSeq, tails[i].NoFirst = w.state.Head, true
		} else {
			tails[i].AfterSeq, _ = x.covered.get(id)
		}
	}
	byRun, err := x.log.EventsFetchTailsBatch(b, tails)
	if err != nil {
		return nil, err
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("round: load %d runs: %w", len(ids), err)
	}
	coolMoved(warm, cps)
	if err := x.fetchShort(ctx, tx, tails, cps, byRun, warm); err != nil {
		return nil, err
	}
	runs := make(map[string]*runView, len(ids))
	var replay []string
	for _, id := range ids {
		if w, ok := warm[id]; ok {
			if runs[id], ok = w.restore(cps[id], byRun[id]); !ok {
				replay = append(replay, id)
			}
			continue
		}
		if runs[id], err = x.restoreRun(id, cps[id], byRun[id]); errors.Is(err, decide.ErrCheckpoint) {
			replay = append(replay, id)
		} else if err != nil {
			return nil, err
		}
	}
	if err := x.replayRuns(ctx, tx, replay, cps, runs); err != nil {
		return nil, err
	}
	return runs, nil
}

// fetchShort fixes up what loadRuns read of the runs that are not warm:
// it drops the events each checkpoint covers and reads again, in one
// query, the runs whose checkpoint covers less than the events read start
// after, or that were read as warm and are not (coolMoved). It records
// each run's checkpoint in x.covered.
func (x *Runner) fetchShort(ctx context.Context, tx pgx.Tx, tails []eventlog.RunTail, cps map[string]*checkpointView, byRun map[string][]events.Event, warm map[string]warmRun) error {
	var short []eventlog.RunTail
	for _, t := range tails {
		covered := cps[t.RunID].covered
		x.covered.put(t.RunID, covered)
		if _, ok := warm[t.RunID]; ok {
			continue
		}
		if covered < t.AfterSeq || t.NoFirst {
			short = append(short, eventlog.RunTail{RunID: t.RunID, AfterSeq: covered})
			continue
		}
		byRun[t.RunID] = slices.DeleteFunc(byRun[t.RunID], func(e events.Event) bool {
			return e.RunSeq != 1 && e.RunSeq <= covered
		})
	}
	if len(short) == 0 {
		return nil
	}
	again, err := x.log.EventsFetchTailsTx(ctx, tx, short)
	if err != nil {
		return err
	}
	for _, t := range short {
		byRun[t.RunID] = again[t.RunID]
	}
	return nil
}

// replayRuns folds the runs of ids from runSeq 1, ignoring their
// checkpoints, into runs.
func (x *Runner) replayRuns(ctx context.Context, tx pgx.Tx, ids []string, cps map[string]*checkpointView, runs map[string]*runView) error {
	if len(ids) == 0 {
		return nil
	}
	byRun, err := x.log.EventsFetchRunsTx(ctx, tx, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		cps[id].covered, cps[id].data = 0, nil
		if runs[id], err = x.restoreRun(id, cps[id], byRun[id]); err != nil {
			return err
		}
	}
	return nil
}

// restoreRun returns run id's view from its checkpoint and evs, its first
// event and the events after the checkpoint (all of them without one). It
// fails with decide.ErrCheckpoint when the checkpoint does not restore; a
// run that cannot load at all (ErrUnknownRun) has it as the view's err.
func (x *Runner) restoreRun(id string, cp *checkpointView, evs []events.Event) (*runView, error) {
	run := &runView{cp: cp}
	var approved approval
	approved, run.err = x.plans.planOf(id, evs)
	run.plan, run.tenant, run.environment = approved.plan, approved.tenant, approved.environment
	if run.err != nil {
		return run, nil //nolint:nilerr // a run that cannot load carries its error in run.err
	}
	run.state = decide.NewState(run.plan.Plan)
	if cp.covered > 0 {
		s, err := decide.RestoreCheckpoint(run.plan.Plan, cp.data)
		if err == nil && (s.RunID != id || s.Head != cp.covered) {
			err = fmt.Errorf("%w: record of run %s at %d, row of run %s at %d", decide.ErrCheckpoint, s.RunID, s.Head, id, cp.covered)
		}
		if err != nil {
			return nil, err
		}
		run.state, cp.data = s, nil
	}
	var err error
	if run.state, err = run.state.Apply(evs...); err != nil {
		return nil, fmt.Errorf("round: fold run %s: %w", id, err)
	}
	cp.tally(evs)
	return run, nil
}

// checkpointTx runs after the batch's appends: under cas-required it
// checks the ownership precondition of every run the batch writes to, and
// it writes a new checkpoint of each run whose history since its last
// checkpoint reached a rotation threshold.
func (x *Runner) checkpointTx(ctx context.Context, tx pgx.Tx, rounds []Round, results []Result, runs map[string]*runView) error {
	writes, appended := writersOf(rounds, results)
	if x.cfg.CASRequired {
		if err := ownershipCheckTx(ctx, tx, writes, runs); err != nil {
			return err
		}
	}
	for _, id := range appended {
		if err := x.rotateTx(ctx, tx, id, runs[id]); err != nil {
			return err
		}
	}
	for i := range results {
		if run := runs[rounds[i].RunID]; run.err == nil {
			results[i].Checkpoint = run.cp.use()
		}
	}
	return nil
}

// writersOf lists, once each, the runs the batch's decisions write to,
// and of those the runs it appended events to.
func writersOf(rounds []Round, results []Result) (writes, appended []string) {
	seen := map[string]int{}
	for i, r := range rounds {
		d := results[i].Decision
		if results[i].Err != nil || d.Empty() {
			continue
		}
		if seen[r.RunID] == 0 {
			writes = append(writes, r.RunID)
			seen[r.RunID] = 1
		}
		if len(d.Events) > 0 && seen[r.RunID] == 1 {
			appended = append(appended, r.RunID)
			seen[r.RunID] = 2
		}
	}
	return writes, appended
}

// ownershipCheckTx is the cas-required precondition. It locks the head
// rows of the runs (run_heads, FOR UPDATE, in run id order; the batch's
// appends hold some already) and then, in a statement that starts after
// the locks are held, reads their checkpoint versions. It requires, per
// run, run_heads.head_seq = the head the round loaded plus the events it
// appended (the appends' own compare-and-swap checked that much for runs
// with events), and run_checkpoints.checkpoint_version (0 without a row) =
// the version it read when it loaded the run. Every checkpoint write holds
// the head lock, so the versions read under it are current until commit.
// A mismatch is a *CheckpointConflictError.
func ownershipCheckTx(ctx context.Context, tx pgx.Tx, ids []string, runs map[string]*runView) error {
	if len(ids) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT run_id::text, head_seq FROM run_heads WHERE run_id = ANY($1::uuid[]) ORDER BY run_id FOR UPDATE`, ids)
	b.Queue(`SELECT run_id::text, checkpoint_version FROM run_checkpoints WHERE run_id = ANY($1::uuid[])`, ids)
	br := tx.SendBatch(ctx, b)
	heads, err := scanPairs(br)
	if err != nil {
		_ = br.Close()
		return fmt.Errorf("round: lock run heads: %w", err)
	}
	versions, err := scanPairs(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("round: read checkpoint versions: %w", err)
	}
	for _, id := range ids {
		run := runs[id]
		if heads[id] != run.state.Head || versions[id] != run.cp.version {
			return &CheckpointConflictError{RunID: id, ExpectedHead: run.state.Head, Head: heads[id],
				ExpectedVersion: run.cp.version, Version: versions[id]}
		}
	}
	return nil
}

// scanPairs reads the next result of br as run id → int64.
func scanPairs(br pgx.BatchResults) (map[string]int64, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	var id string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error { out[id] = n; return nil })
	return out, err
}

// rotateSQL writes the run's new checkpoint, one version above the one it
// replaces. It never replaces a newer format's row. With $6
// (cas-required) it replaces only the version the round read ($2);
// without, only a row that covers less. No row returned: nothing written.
const rotateSQL = `
INSERT INTO run_checkpoints AS c (run_id, checkpoint_version, format_version, covered_seq, state)
VALUES ($1, $2 + 1, $3, $4, $5)
ON CONFLICT (run_id) DO UPDATE
SET checkpoint_version = c.checkpoint_version + 1, format_version = EXCLUDED.format_version,
    covered_seq = EXCLUDED.covered_seq, state = EXCLUDED.state, written_at = clock_timestamp()
WHERE c.format_version <= EXCLUDED.format_version
  AND CASE WHEN $6::boolean THEN c.checkpoint_version = $2 ELSE c.covered_seq < EXCLUDED.covered_seq END
RETURNING checkpoint_version`

// rotateTx writes a checkpoint of run's state, as of its new head, when
// its history since the last checkpoint reached CheckpointSteps ended
// attempts or CheckpointBytes bytes. It runs after the batch's appends,
// which hold the run's head lock. Under cas-required, a row that moved
// since the round read it is a *CheckpointConflictError.
func (x *Runner) rotateTx(ctx context.Context, tx pgx.Tx, id string, run *runView) error {
	cp := run.cp
	due := (x.cfg.CheckpointSteps > 0 && cp.steps >= x.cfg.CheckpointSteps) ||
		(x.cfg.CheckpointBytes > 0 && cp.bytes >= x.cfg.CheckpointBytes)
	if !due || cp.readOnly {
		return nil
	}
	data, err := decide.MarshalCheckpoint(run.plan.Plan, run.state)
	if err != nil {
		return fmt.Errorf("round: checkpoint run %s: %w", id, err)
	}
	err = tx.QueryRow(ctx, rotateSQL, id, cp.version, decide.CheckpointFormat, run.state.Head, data,
		x.cfg.CASRequired).Scan(&cp.written)
	switch {
	case errors.Is(err, pgx.ErrNoRows) && x.cfg.CASRequired:
		return &CheckpointConflictError{RunID: id, ExpectedHead: run.state.Head, Head: run.state.Head,
			ExpectedVersion: cp.version, Version: -1}
	case errors.Is(err, pgx.ErrNoRows):
		return nil // single-owner: a checkpoint as recent is there already
	case err != nil:
		return fmt.Errorf("round: write checkpoint of run %s: %w", id, err)
	}
	x.covered.put(id, run.state.Head)
	return nil
}
