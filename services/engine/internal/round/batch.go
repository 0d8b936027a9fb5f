package round

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/admission"
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

// genericPlans puts a round's transaction on generic plans from its first
// statement, the checkpoint load (eventlog.GenericPlansSQL says why).
const genericPlans = eventlog.GenericPlansSQL

// RunBatch executes rounds, in order, in one transaction: one load of all
// their runs, one round trip for all their appends (each under its run's
// compare-and-swap), one enqueue of all their tasks, one commit, so many
// rounds share one WAL flush. Rounds of one run see each other's events.
// Rounds with a Claim are not batched (use Run). When the batch fails (a
// conflict with another engine, or one round that cannot be written), it
// is rolled back and each round runs on its own with Run, so one bad round
// does not hold the others back; each Result then carries its own Err
// (ErrUnknownRun, or the round's failure). RunBatch's own error is ctx's.
func (x *Runner) RunBatch(ctx context.Context, rounds []Round) ([]Result, error) {
	var results []Result
	err := pgx.BeginFunc(ctx, x.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, genericPlans); err != nil {
			return err
		}
		var err error
		results, err = x.batch(ctx, tx, rounds)
		if err == nil && x.cfg.BeforeCommit != nil && anyDecided(results) {
			x.cfg.BeforeCommit()
		}
		return err
	})
	if err == nil {
		return results, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if len(rounds) == 1 && !errors.Is(err, eventlog.ErrConflict) {
		return []Result{{Err: err}}, nil
	}
	results = make([]Result, len(rounds))
	for i, r := range rounds {
		results[i].Outcome, results[i].Err = x.Run(ctx, r)
	}
	return results, ctx.Err()
}

// runView is one run as a transaction sees it: its plan, environment and
// state so far, or why it cannot be loaded.
type runView struct {
	plan        *plan.Plan
	environment string
	state       decide.State
	err         error
	cp          *checkpointView
}

func (x *Runner) batch(ctx context.Context, tx pgx.Tx, rounds []Round) ([]Result, error) {
	ids := make([]string, 0, len(rounds))
	for _, r := range rounds {
		if r.Claim != nil {
			return nil, fmt.Errorf("round: RunBatch cannot run a round with a Claim (run %s)", r.RunID)
		}
		if !slices.Contains(ids, r.RunID) {
			ids = append(ids, r.RunID)
		}
	}
	runs, err := x.loadRuns(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	if x.cfg.AfterLoad != nil {
		x.cfg.AfterLoad()
	}
	results := make([]Result, len(rounds))
	var parts []eventlog.RunAppend
	var tasks []decide.Task
	var timers []decide.Timer
	var partTraces, taskTraces []trace.SpanContext
	for i, r := range rounds {
		if run := runs[r.RunID]; run.err != nil {
			results[i].Err = run.err
			continue
		}
		var part eventlog.RunAppend
		if results[i].Outcome, part, err = x.step(ctx, tx, r, runs[r.RunID]); err != nil {
			return nil, err
		}
		if len(part.Events) > 0 {
			parts, partTraces = append(parts, part), append(partTraces, r.Trace)
		}
		tasks, timers = append(tasks, results[i].Decision.Tasks...), append(timers, results[i].Decision.Timers...)
		for range results[i].Decision.Tasks {
			taskTraces = append(taskTraces, r.Trace)
		}
	}
	if err := x.appendAll(ctx, tx, parts, partTraces, results); err != nil {
		return nil, err
	}
	if err := x.checkpointTx(ctx, tx, rounds, results, runs); err != nil {
		return nil, err
	}
	if err := writeFollowUps(ctx, tx, tasks, taskTraces, timers); err != nil {
		return nil, err
	}
	return results, nil
}

// errMispredicted reports that the log already held an event a round
// decided, so the runSeqs the batch folded its later rounds with are
// wrong. The batch is rolled back and its rounds run one at a time.
var errMispredicted = fmt.Errorf("round: a decided event was already in the log: %w", eventlog.ErrConflict)

// appendAll appends every round's events in one round trip (with the
// outbox rows of all of them in another), each part under its run's
// compare-and-swap, and records how many each round wrote. The outbox rows
// of parts[p] carry traces[p].
func (x *Runner) appendAll(ctx context.Context, tx pgx.Tx, parts []eventlog.RunAppend, traces []trace.SpanContext, results []Result) error {
	if len(parts) == 0 {
		return nil
	}
	res, err := x.journal.AppendManyTracedTx(ctx, tx, parts, traces)
	if err != nil {
		return err
	}
	for p, part := range parts {
		for i, r := range res[p] {
			if !r.Persisted || r.RunSeq != part.Events[i].RunSeq {
				return errMispredicted
			}
		}
	}
	p := 0
	for i := range results {
		if len(results[i].Decision.Events) > 0 {
			results[i].Appended = len(parts[p].Events)
			p++
		}
	}
	return nil
}

// step is one round on a loaded run, inside tx: admission, the decision,
// and the run's place in engine_runs. It returns the decision's events as
// the part to append, numbered from the run's head with the gap-free
// runSeqs the append authority will give them, and folds them into run's
// state, so a later round of the run in the same batch decides from them.
// appendAll checks the numbering. Tasks and timers are the caller's.
func (x *Runner) step(ctx context.Context, tx pgx.Tx, r Round, run *runView) (Outcome, eventlog.RunAppend, error) {
	in, err := x.admit(ctx, tx, r.Input, run)
	if err != nil {
		return Outcome{}, eventlog.RunAppend{}, err
	}
	d := decide.Decide(run.plan, run.state, in)
	out := Outcome{Decision: d, Plan: run.plan, State: run.state}
	if d.Empty() {
		return out, eventlog.RunAppend{}, nil
	}
	evs, err := buildEvents(r.RunID, d)
	if err != nil {
		return out, eventlog.RunAppend{}, err
	}
	head := run.state.Head
	for i := range evs {
		evs[i].RunSeq = head + int64(i) + 1
	}
	if run.state, err = run.state.Apply(evs...); err != nil {
		return out, eventlog.RunAppend{}, err
	}
	run.cp.tally(evs)
	return out, eventlog.RunAppend{ExpectedHead: &head, Events: evs}, trackRunTx(ctx, tx, r.RunID, run.environment, d)
}

// admit applies the environment's backpressure policy to a start: when
// the environment has no room, QUEUE marks the start Full (the run is
// queued) and DELAY gives it a DelayUntil (the run starts, its dispatch
// waits). It checks only rounds that could start an approved run, and then
// holds the environment's admission lock until tx ends, so the check and
// the start commit together.
func (x *Runner) admit(ctx context.Context, tx pgx.Tx, in decide.Input, run *runView) (decide.Input, error) {
	if run.state.Status != events.RunStatusApproved {
		return in, nil
	}
	switch v := in.(type) {
	case decide.RunApproved:
		full, until, err := x.room(ctx, tx, run, v.Now)
		v.Full, v.DelayUntil = full, until
		return v, err
	case decide.Resync:
		full, until, err := x.room(ctx, tx, run, v.Now)
		v.Full, v.DelayUntil = full, until
		return v, err
	}
	return in, nil
}

// room checks the run's environment and returns what its policy makes of
// a start now: queue it (full), delay its dispatch until a time, or
// neither.
func (x *Runner) room(ctx context.Context, tx pgx.Tx, run *runView, now time.Time) (full bool, delayUntil time.Time, err error) {
	lim := x.cfg.Admission.For(run.environment)
	ok, err := admission.HasRoomTx(ctx, tx, run.environment, lim, run.state.RunID)
	switch {
	case err != nil || ok:
		return false, time.Time{}, err
	case lim.Policy == admission.Delay:
		return false, now.Add(lim.DelayBy), nil
	default:
		return true, time.Time{}, nil
	}
}

// buildEvents makes d's events appendable.
func buildEvents(runID string, d decide.Decision) ([]events.Event, error) {
	evs := make([]events.Event, len(d.Events))
	for i, spec := range d.Events {
		ev, err := events.New(spec)
		if err != nil {
			return nil, fmt.Errorf("round: run %s: build %s: %w", runID, spec.Type, err)
		}
		// As Postgres stores it, so that the state folded here (and a
		// checkpoint of it) is the state a fold of the log gives.
		ev.EmittedAt = ev.EmittedAt.Truncate(time.Microsecond)
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
