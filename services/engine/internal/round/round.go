// Package round executes the engine's rounds (transactional-rounds.md): in
// one Postgres transaction it loads a run's latest checkpoint and the
// events after it (every event, without one), folds them into the
// decider's state, asks the pure decider what to do with one input, appends
// the new events with a compare-and-swap on the run's head, and writes the
// follow-up tasks to the outbox and the timers to engine_timers; it also
// rotates the run's checkpoint when enough history has accumulated
// (checkpoint.go, docs/checkpoints.md). The caller
// acks the message that carried the input only after Run returns nil, so a
// crash anywhere before the commit redelivers the input, and a crash after
// it finds the round's events in the log and decides nothing (the fast
// path).
package round

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// DefaultMaxConflicts is how many compare-and-swap conflicts one round
// absorbs (reloading and deciding again each time) before it gives up.
const DefaultMaxConflicts = 16

// ErrUnknownRun reports an input for a run with no events in the log, or
// whose first event is not RunApproved. Redelivering it cannot help.
var ErrUnknownRun = errors.New("round: unknown run")

// Config tunes a Runner. The zero value of each field means its default.
type Config struct {
	// MaxConflicts bounds the reload-and-retry loop of one round.
	MaxConflicts int
	// Admission is each environment's limit of concurrent runs; a round
	// that would start a run of a full environment queues it instead.
	Admission admission.Limits
	// Released, if set, is called after a commit that gave concurrency
	// slots back (a run of a plan with concurrency limits ended): the
	// engine's key queue then serves their wakes at once.
	Released func()
	// BeforeCommit, if set, runs after a round wrote its decision and
	// before its transaction commits. Crash tests kill the process there.
	BeforeCommit func()
	// Conflicted, if set, is called for every compare-and-swap conflict a
	// round or a batch absorbs: another engine (or a timer, a sweep)
	// wrote to the run since it was loaded.
	Conflicted func(ctx context.Context)
	// CheckpointSteps and CheckpointBytes are the rotation thresholds: a
	// round that appends to a run writes a new checkpoint of it, in its
	// transaction, once the history since the last checkpoint holds this
	// many ended step attempts or this many bytes (HistoryBytes). Zero
	// means DefaultCheckpointSteps and DefaultCheckpointBytes; a negative
	// value turns that trigger off. Checkpoints are read whatever these
	// say.
	CheckpointSteps, CheckpointBytes int
	// CASRequired selects cas-required checkpoint ownership: a round that
	// writes to a run commits only if the run's head and its checkpoint
	// version are still what the round read (ownershipCheckTx); otherwise
	// it gets a *CheckpointConflictError, reloads and decides again. False
	// is single-owner mode: only the appends' head compare-and-swap
	// applies (docs/checkpoints.md).
	CASRequired bool
	// AfterLoad, if set, runs in every round (every batch) after the runs
	// were loaded and before anything is decided. Race tests hold two
	// owners there.
	AfterLoad func()
	// WarmRuns is how many runs the Runner keeps warm (warm.go): their
	// states as its last commit left them, so that their next rounds read
	// and fold only the events after. Zero means DefaultWarmRuns; a
	// negative value keeps none, and every round loads its run from the
	// checkpoint and the log.
	WarmRuns int
	// TaskSigner signs every task the rounds dispatch (task.Task.Token),
	// so that the engine can tell a worker's result for the task from a
	// forged one. Nil sends tasks without a token.
	TaskSigner *task.Signer
	// EnsureLanes, if set, makes sure a queue's lanes stream exists
	// (streams.EnsureTaskLanes) before a round writes a tenant's task of
	// that queue to the outbox: the relay cannot publish a task no stream
	// captures. It is called in the round's transaction, so it should
	// remember the queues it ensured; an error fails the round.
	EnsureLanes func(ctx context.Context, queue string) error
	// MaxRunDepth is how deep child runs nest: a subPlan step of a run at
	// this depth fails (CHILD_RUN_REFUSED) instead of starting a child.
	// Zero means plan.DefaultMaxRunDepth.
	MaxRunDepth int
	// PlanLimits are the limits a child run's plan is validated against
	// when its step starts it; the zero value means plan's defaults.
	PlanLimits plan.Limits
}

// DefaultWarmRuns is Config.WarmRuns's default: a state is a few hundred
// bytes per step, so this is some megabytes for plans of tens of steps.
const DefaultWarmRuns = 4096

// Runner executes rounds. It is safe for concurrent use; rounds of one run
// may race, and the head compare-and-swap serialises them.
type Runner struct {
	pool    *pgxpool.Pool
	log     *eventlog.Store
	journal *journal.Journal
	cfg     Config
	plans   planCache
	// covered is the runSeq each run's checkpoint covered when this
	// Runner last loaded or wrote it (loadRuns).
	covered memo[int64]
	// warm holds the runs as this Runner last committed them (warm.go).
	warm memo[warmRun]
	// childPlans holds the child runs' plans validated (children.go): the
	// elements of a forEach subPlan step start children of one plan.
	childPlans *plan.Cache
}

// New returns a Runner over pool, whose database has the Weft schema,
// reading the runs from log and writing through j, whose metrics count
// the events the rounds append.
func New(pool *pgxpool.Pool, log *eventlog.Store, j *journal.Journal, cfg Config) *Runner {
	cfg.MaxConflicts = cmp.Or(cfg.MaxConflicts, DefaultMaxConflicts)
	cfg.CheckpointSteps = cmp.Or(cfg.CheckpointSteps, DefaultCheckpointSteps)
	cfg.CheckpointBytes = cmp.Or(cfg.CheckpointBytes, DefaultCheckpointBytes)
	cfg.WarmRuns = cmp.Or(cfg.WarmRuns, DefaultWarmRuns)
	cfg.MaxRunDepth = cmp.Or(cfg.MaxRunDepth, plan.DefaultMaxRunDepth)
	x := &Runner{pool: pool, log: log, journal: j, cfg: cfg, childPlans: plan.NewCache(cfg.PlanLimits, 0)}
	x.warm.size = max(cfg.WarmRuns, 1)
	return x
}

// Round is one input for one run.
type Round struct {
	RunID string
	Input decide.Input
	// Claim, if set, runs first in the round's transaction; when it returns
	// false the round does nothing else and commits (the timer loop deletes
	// the timer here, and a timer another engine already fired is skipped).
	Claim func(ctx context.Context, tx pgx.Tx) (bool, error)
	// Trace is the span context of the round (the engine's round span), or
	// zero. The events and tasks the round writes carry it to the bus; with
	// none they carry the span context of the ctx the round runs under.
	Trace trace.SpanContext
}

// Outcome reports what a round did.
type Outcome struct {
	// Decision is what the decider returned in the attempt that committed.
	Decision decide.Decision
	// Appended counts the events newly written; a round that decided only
	// events already in the log appends none.
	Appended int
	// Conflicts counts the compare-and-swap conflicts absorbed.
	Conflicts int
	// Plan and State are the run's plan and its state before the decision.
	Plan  *plan.Plan
	State decide.State
	// Checkpoint says how the round used the run's checkpoint.
	Checkpoint CheckpointUse
	// Keys is what the round's admission did under the plan's
	// concurrency limits (keys.go), for the engine's metrics.
	Keys []KeyEvent
}

// Run executes r, retrying on a head conflict, and returns once its
// transaction has committed. An error means nothing of the round was
// written.
func (x *Runner) Run(ctx context.Context, r Round) (Outcome, error) {
	var out Outcome
	for {
		var runs map[string]*runView
		err := x.journal.Run(ctx, x.pool, func(w *journal.Write) error {
			var err error
			out, runs, err = x.attempt(ctx, w, r, out.Conflicts)
			return err
		})
		if err == nil {
			x.keepWarm(runs)
			x.released([]Round{r}, []Result{{Outcome: out}}, runs)
		} else {
			x.forget(r.RunID)
		}
		if !errors.Is(err, eventlog.ErrConflict) {
			return out, err
		}
		x.conflicted(ctx)
		out.Conflicts++
		if out.Conflicts >= x.cfg.MaxConflicts {
			return out, fmt.Errorf("round: run %s: %d conflicts in a row: %w", r.RunID, out.Conflicts, err)
		}
	}
}

func (x *Runner) conflicted(ctx context.Context) {
	if x.cfg.Conflicted != nil {
		x.cfg.Conflicted(ctx)
	}
}

// attempt is one try of r in w, a unit of work of its own (journal.Run:
// its BEGIN goes out with the Claim or the load of the run, its COMMIT
// with the last writes). It returns the round's outcome and the run as
// the round leaves it (none when a Claim declined the round).
func (x *Runner) attempt(ctx context.Context, w *journal.Write, r Round, conflicts int) (Outcome, map[string]*runView, error) {
	out := Outcome{Conflicts: conflicts}
	if r.Claim != nil {
		if ok, err := r.Claim(ctx, w.Tx()); err != nil || !ok {
			return out, nil, err
		}
	}
	r.Claim = nil
	results, runs, err := x.batch(ctx, w, []Round{r})
	if err != nil {
		return out, nil, err
	}
	out = results[0].Outcome
	out.Conflicts = conflicts
	if results[0].Err != nil {
		return out, nil, results[0].Err
	}
	return out, runs, x.commit(ctx, w, results)
}
