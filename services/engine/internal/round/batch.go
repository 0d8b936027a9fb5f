package round

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// Result is the outcome of one round of a batch.
type Result struct {
	Outcome
	// Err is the round's own failure (ErrUnknownRun); a failure of the
	// whole batch is RunBatch's error instead.
	Err error
}

// RunBatch executes rounds, in order, in one transaction: one load of all
// their runs, each round's append with its compare-and-swap, one enqueue of
// all their tasks, one commit, so many rounds share one WAL flush. Rounds
// of one run see each other's events. Rounds with a Claim are not batched
// (use Run). When another engine races one of the runs (a compare-and-swap
// conflict), the batch is rolled back and each round runs on its own with
// Run. A round for an unknown run fails alone, with ErrUnknownRun in its
// Result. An error means nothing of the batch was written.
func (x *Runner) RunBatch(ctx context.Context, rounds []Round) ([]Result, error) {
	var results []Result
	err := pgx.BeginFunc(ctx, x.pool, func(tx pgx.Tx) error {
		var err error
		results, err = x.batch(ctx, tx, rounds)
		if err == nil && x.cfg.BeforeCommit != nil && anyDecided(results) {
			x.cfg.BeforeCommit()
		}
		return err
	})
	if !errors.Is(err, eventlog.ErrConflict) {
		return results, err
	}
	results = make([]Result, len(rounds))
	for i, r := range rounds {
		results[i].Outcome, results[i].Err = x.Run(ctx, r)
		if results[i].Err != nil && !errors.Is(results[i].Err, ErrUnknownRun) {
			return nil, results[i].Err
		}
	}
	return results, nil
}

// loaded is one run of a batch: its plan and its state so far.
type loaded struct {
	plan  *plan.Plan
	state decide.State
	err   error
}

func (x *Runner) batch(ctx context.Context, tx pgx.Tx, rounds []Round) ([]Result, error) {
	runs, err := x.loadRuns(ctx, tx, rounds)
	if err != nil {
		return nil, err
	}
	results := make([]Result, len(rounds))
	var tasks []decide.Task
	var timers []decide.Timer
	var done []string
	for i, r := range rounds {
		if r.Claim != nil {
			return nil, fmt.Errorf("round: RunBatch cannot run a round with a Claim (run %s)", r.RunID)
		}
		run := runs[r.RunID]
		if run.err != nil {
			results[i].Err = run.err
			continue
		}
		d := decide.Decide(run.plan, run.state, r.Input)
		results[i].Outcome = Outcome{Decision: d, Plan: run.plan, State: run.state}
		if d.Empty() {
			continue
		}
		appended, err := x.appendEvents(ctx, tx, r.RunID, run, d)
		if err != nil {
			return nil, err
		}
		results[i].Appended = appended
		tasks, timers = append(tasks, d.Tasks...), append(timers, d.Timers...)
		if ended(d) {
			done = append(done, r.RunID)
		}
	}
	if err := writeFollowUps(ctx, tx, tasks, timers, done); err != nil {
		return nil, err
	}
	return results, nil
}

// loadRuns reads every run of the batch in one query and folds each.
func (x *Runner) loadRuns(ctx context.Context, tx pgx.Tx, rounds []Round) (map[string]*loaded, error) {
	ids := make([]string, 0, len(rounds))
	for _, r := range rounds {
		if !slices.Contains(ids, r.RunID) {
			ids = append(ids, r.RunID)
		}
	}
	byRun, err := x.log.EventsFetchRunsTx(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	runs := make(map[string]*loaded, len(ids))
	for _, id := range ids {
		run := &loaded{}
		run.plan, run.err = planOf(id, byRun[id])
		if run.err == nil {
			run.state, err = decide.Fold(run.plan, byRun[id])
			if err != nil {
				return nil, fmt.Errorf("round: fold run %s: %w", id, err)
			}
		}
		runs[id] = run
	}
	return runs, nil
}

// appendEvents appends d's events with a compare-and-swap on the run's
// state and folds them into it, so a later round of the run in the batch
// sees them. It returns how many were newly written.
func (x *Runner) appendEvents(ctx context.Context, tx pgx.Tx, runID string, run *loaded, d decide.Decision) (int, error) {
	evs, err := buildEvents(runID, d)
	if err != nil {
		return 0, err
	}
	head := run.state.Head
	res, err := x.journal.AppendTx(ctx, tx, &head, evs...)
	if err != nil {
		return 0, err
	}
	appended := 0
	for i := range evs {
		evs[i].RunSeq = res[i].RunSeq
		if res[i].Persisted {
			appended++
		}
	}
	if appended != len(evs) {
		// The log already held some of them: refold from the log before
		// deciding again for this run.
		run.err = fmt.Errorf("round: run %s: decided events already in the log", runID)
		return appended, nil
	}
	run.state, err = run.state.Apply(evs...)
	return appended, err
}

// buildEvents makes d's events appendable.
func buildEvents(runID string, d decide.Decision) ([]events.Event, error) {
	evs := make([]events.Event, len(d.Events))
	for i, spec := range d.Events {
		ev, err := events.New(spec)
		if err != nil {
			return nil, fmt.Errorf("round: run %s: build %s: %w", runID, spec.Type, err)
		}
		evs[i] = ev
	}
	return evs, nil
}

func anyDecided(results []Result) bool {
	for _, r := range results {
		if !r.Decision.Empty() {
			return true
		}
	}
	return false
}
