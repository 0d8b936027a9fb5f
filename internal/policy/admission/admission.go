// Package admission enforces each environment's limit of concurrent runs
// and its backpressure policy (execution-semantics §3). A run holds a place
// in its environment from the round that starts it to the round that ends
// it (engine_runs.started_at). Every check takes the environment's
// transaction-scoped advisory lock first, so the check and the start it
// allows commit together: two engines, or two gateways, never both take
// the last place.
package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Policy is what happens to a run approved while its environment is full.
type Policy string

// The policies.
const (
	// Reject refuses the run at approval: nothing is written and the caller
	// is told to retry later (HTTP 429 with Retry-After).
	Reject Policy = "REJECT"
	// Queue approves the run and parks it (RunQueued, status QUEUED); the
	// run-queue reconciler starts queued runs, oldest first, as places free.
	Queue Policy = "QUEUE"
	// Delay approves and starts the run at once, beyond the limit, but
	// dispatches none of its steps before Limit.DelayBy has passed.
	Delay Policy = "DELAY"
)

// Limit is one environment's limit.
type Limit struct {
	// MaxConcurrentRuns is how many of the environment's runs may be
	// started and unfinished at once; zero means no limit.
	MaxConcurrentRuns int
	// Policy applies when the environment is full; empty means Queue.
	Policy Policy
	// RetryAfter is what a rejected caller is told to wait; zero means 5s.
	RetryAfter time.Duration
	// DelayBy is how long a run started under Delay into a full
	// environment waits before its first dispatch; zero means 10s.
	DelayBy time.Duration
}

// Limits are the limits of every environment: Default, unless
// PerEnvironment names the environment.
type Limits struct {
	Default        Limit
	PerEnvironment map[string]Limit
	// Live, when set, holds the limits instead, and Default and
	// PerEnvironment are ignored: For and Validate read Live's limits of
	// the moment, so limits that change while a service runs (a reloaded
	// admission file, Watcher) reach it through a Limits it was given once.
	Live *Live
}

// For returns environment's limit.
func (l Limits) For(environment string) Limit {
	if l.Live != nil {
		l = l.Live.Load()
	}
	lim, ok := l.PerEnvironment[environment]
	if !ok {
		lim = l.Default
	}
	if lim.Policy == "" {
		lim.Policy = Queue
	}
	if lim.RetryAfter == 0 {
		lim.RetryAfter = 5 * time.Second
	}
	if lim.DelayBy == 0 {
		lim.DelayBy = 10 * time.Second
	}
	return lim
}

// Validate reports a limit no engine can apply.
func (l Limits) Validate() error {
	if l.Live != nil {
		l = l.Live.Load()
	}
	for env, lim := range l.PerEnvironment {
		if err := lim.validate(); err != nil {
			return fmt.Errorf("admission: environment %q: %w", env, err)
		}
	}
	if err := l.Default.validate(); err != nil {
		return fmt.Errorf("admission: default: %w", err)
	}
	return nil
}

func (lim Limit) validate() error {
	switch {
	case lim.MaxConcurrentRuns < 0:
		return fmt.Errorf("MaxConcurrentRuns %d is negative", lim.MaxConcurrentRuns)
	case lim.Policy != "" && lim.Policy != Reject && lim.Policy != Queue && lim.Policy != Delay:
		return fmt.Errorf("policy %q is not REJECT, QUEUE or DELAY", lim.Policy)
	case lim.DelayBy < 0:
		return fmt.Errorf("DelayBy %v is negative", lim.DelayBy)
	}
	return nil
}

// ErrRejected is wrapped by the error of a run refused under Reject.
var ErrRejected = errors.New("admission: environment at its limit of concurrent runs")

// RejectedError is a refusal under Reject: the environment and how long to
// wait before trying again.
type RejectedError struct {
	Environment string
	Limit       int
	RetryAfter  time.Duration
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("admission: environment %q has %d concurrent runs, its limit; retry after %v",
		e.Environment, e.Limit, e.RetryAfter)
}

// Is makes errors.Is(err, ErrRejected) true.
func (e *RejectedError) Is(target error) bool { return target == ErrRejected }

// lockSQL takes the admission lock of a name (an environment's,
// environmentLockName; a key's slot's, keyLockName) until the transaction
// ends. Advisory locks are re-entrant: taking one again is free.
const lockSQL = `SELECT pg_advisory_xact_lock(hashtext($1))`

// environmentLockName is the name of an environment's admission lock.
func environmentLockName(environment string) string { return "weft-admission:" + environment }

// QueueLocks queues on b the admission locks of environments and of the
// slots of keys (Key.Slot), in the one order every caller shares (sorted
// by name, each once), for a transaction that will check several: taking
// them all first, in that order, means two such transactions cannot
// deadlock, whatever order their checks come in. RoomTx, CheckRejectTx
// and CountKeysTx then find their locks held.
func QueueLocks(b *pgx.Batch, environments, slots []string) {
	names := make([]string, 0, len(environments)+len(slots))
	for _, env := range environments {
		names = append(names, environmentLockName(env))
	}
	for _, slot := range slots {
		names = append(names, keyLockName(slot))
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		b.Queue(lockSQL, name)
	}
}

// lockEnvironmentTx takes environment's admission lock until tx ends.
func lockEnvironmentTx(ctx context.Context, tx pgx.Tx, environment string) error {
	_, err := tx.Exec(ctx, lockSQL, environmentLockName(environment))
	if err != nil {
		return fmt.Errorf("admission: lock environment %q: %w", environment, err)
	}
	return nil
}

// Room is what RoomTx found of an environment, for one run.
type Room struct {
	// Started is how many of the environment's runs have started and not
	// ended; Limit is its MaxConcurrentRuns, zero for none.
	Started, Limit int
	// Ahead is how many of its queued runs come before the run: those of
	// a higher priority, then those of its own approved before it.
	Ahead int
}

// Free reports whether the run may start now: the environment has no
// limit, or its started runs are below it and no run is queued ahead.
func (r Room) Free() bool { return r.Limit == 0 || r.Started < r.Limit && r.Ahead == 0 }

// RoomTx returns, holding the environment's admission lock until tx ends,
// the room the environment has for run (of admission priority priority):
// its started runs, its limit and the runs queued ahead of run, higher
// priorities first, then in (approved_at, run_id) order. With no limit it
// takes no lock and counts nothing.
func RoomTx(ctx context.Context, tx pgx.Tx, environment string, lim Limit, runID string, priority int) (Room, error) {
	if lim.MaxConcurrentRuns == 0 {
		return Room{}, nil
	}
	if err := lockEnvironmentTx(ctx, tx, environment); err != nil {
		return Room{}, err
	}
	r := Room{Limit: lim.MaxConcurrentRuns}
	err := tx.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE started_at IS NOT NULL),
		       count(*) FILTER (WHERE queued_at IS NOT NULL AND started_at IS NULL AND run_id <> $2
		                          AND (priority > $3 OR priority = $3
		                               AND (approved_at, run_id) < (SELECT approved_at, run_id FROM engine_runs WHERE run_id = $2)))
		FROM engine_runs WHERE environment_id = $1`, environment, runID, priority).Scan(&r.Started, &r.Ahead)
	if err != nil {
		return Room{}, fmt.Errorf("admission: count runs of %q: %w", environment, err)
	}
	return r, nil
}

// CheckRejectTx is the approval-time check: under Reject, with the
// environment's admission lock held until tx ends, it refuses the run with
// a *RejectedError when the environment's unfinished runs (started or about
// to start) fill its limit. Under Queue it admits every run.
func CheckRejectTx(ctx context.Context, tx pgx.Tx, environment string, lim Limit) error {
	if lim.MaxConcurrentRuns == 0 || lim.Policy != Reject {
		return nil
	}
	if err := lockEnvironmentTx(ctx, tx, environment); err != nil {
		return err
	}
	var unfinished int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM engine_runs WHERE environment_id = $1`, environment).Scan(&unfinished); err != nil {
		return fmt.Errorf("admission: count runs of %q: %w", environment, err)
	}
	if unfinished >= lim.MaxConcurrentRuns {
		return &RejectedError{Environment: environment, Limit: lim.MaxConcurrentRuns, RetryAfter: lim.RetryAfter}
	}
	return nil
}
