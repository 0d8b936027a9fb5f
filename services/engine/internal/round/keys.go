package round

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/plan/expr"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// This file applies a plan's run concurrency limits (docs/flow-control.md)
// to the rounds that may start a run: each limit's key is evaluated on
// the run's input, every slot's lock is taken with the batch's other
// admission locks, and the run takes every slot, waits in the queue of
// the first full one, or, under CANCEL_NEWEST, is cancelled. A run that
// ends gives its slots back and wakes them (the engine's key queue).

// keyed reports whether run's plan has concurrency limits that apply to
// it: a child run's never do (isChild).
func keyed(run *runView) bool { return len(run.plan.Concurrency) > 0 && !isChild(run) }

// keysOf returns run's keys, evaluated once per run view, or why they
// cannot be (a key that yields no string: the intake refuses such a
// start, so only a plan pushed before its limits were checked gets here).
func keysOf(run *runView) ([]admission.Key, string) {
	if run.keys != nil || run.keysWhy != "" || !keyed(run) {
		return run.keys, run.keysWhy
	}
	info := run.state.Run
	vars := expr.Vars{Input: json.RawMessage(info.Input), Run: expr.RunVars{TenantID: info.TenantID, ProjectID: info.ProjectID,
		EnvironmentID: info.EnvironmentID, PlanID: run.plan.PlanID, PlanVersion: run.plan.PlanVersion}}
	keys, found := run.plan.RunKeys(vars)
	if len(found) > 0 {
		run.keysWhy = "concurrency limit: " + found[0].String()
		return nil, run.keysWhy
	}
	run.keys = admission.KeysOf(run.environment, run.plan.PlanID, run.plan.Concurrency, keys)
	return run.keys, ""
}

// startable returns the runs of the batch's rounds that a round may
// start and whose plans' limits apply to them, each once.
func startable(rounds []Round, runs map[string]*runView) []*runView {
	var out []*runView
	for _, r := range rounds {
		run := runs[r.RunID]
		if run.err != nil || !mayStart(r.Input, run) || !keyed(run) || slices.Contains(out, run) {
			continue
		}
		out = append(out, run)
	}
	return out
}

// keySlots returns the slots of the keys of runs, whose locks the batch
// takes first (admission.QueueLocks).
func keySlots(runs []*runView) []string {
	var slots []string
	for _, run := range runs {
		keys, _ := keysOf(run)
		for _, k := range keys {
			slots = append(slots, k.Slot)
		}
	}
	return slots
}

// countKeys counts, once for the batch, in the round trip that takes its
// locks (queued on w before it), the room of runs in their slots, and
// gives each the batch's ledger (keyRoom).
func countKeys(ctx context.Context, w *journal.Write, runs []*runView) error {
	if len(runs) == 0 {
		return nil
	}
	waiters, keys := make([]admission.Waiter, len(runs)), make([][]admission.Key, len(runs))
	for i, run := range runs {
		waiters[i] = waiterOf(run)
		keys[i], _ = keysOf(run)
	}
	ledger := admission.QueueCountKeys(w.Batch(), waiters, keys)
	for _, run := range runs {
		run.ledger = ledger
	}
	return w.Flush(ctx)
}

func waiterOf(run *runView) admission.Waiter {
	return admission.Waiter{RunID: run.state.RunID, Priority: api.EffectivePriority(run.state.Run.Priority)}
}

// keyRoom applies run's concurrency limits to a start, after its
// environment admitted it: from the batch's ledger (countKeys), it
// queues on w the run's take of every slot when all have room, and
// otherwise its wait in the queue of the first full one (QUEUE,
// GROUP_ROUND_ROBIN and CANCEL_OLDEST, which also asks the slot's oldest
// runs to cancel: run.victims) or its refusal (CANCEL_NEWEST). It
// returns what holds the run, if anything.
func (x *Runner) keyRoom(ctx context.Context, w *journal.Write, run *runView) (admitted, error) {
	if !keyed(run) {
		return admitted{}, nil
	}
	keys, why := keysOf(run)
	if why != "" {
		return admitted{refuse: why}, nil
	}
	if run.ledger == nil {
		return admitted{}, fmt.Errorf("round: run %s: its keys were not counted", run.state.RunID)
	}
	me := waiterOf(run)
	room := run.ledger.Room(me, keys)
	if room.Blocked < 0 {
		waited := run.ledger.Took(me, keys, time.Now())
		for _, k := range keys {
			run.keyEvents = append(run.keyEvents, KeyEvent{Key: k, Outcome: KeyAdmitted, Waited: waited})
		}
		admission.QueueTakeKeys(w.Batch(), me.RunID, keys)
		return admitted{}, nil
	}
	k := keys[room.Blocked]
	if k.Strategy == plan.StrategyCancelNewest {
		run.keyEvents = append(run.keyEvents, KeyEvent{Key: k, Outcome: KeyCancelled, Count: 1})
		return admitted{refuse: fmt.Sprintf("cancelled by its concurrency limit: %d of %d running for %s (CANCEL_NEWEST)",
			room.Held, k.Limit, k.Label)}, nil
	}
	if k.Strategy == plan.StrategyCancelOldest {
		if err := w.Flush(ctx); err != nil {
			return admitted{}, err
		}
		var err error
		if run.victims, err = admission.CancelOldestTx(ctx, w.Tx(), me.RunID, k, room); err != nil {
			return admitted{}, err
		}
		run.keyEvents = append(run.keyEvents, KeyEvent{Key: k, Outcome: KeyCancelled, Count: len(run.victims)})
	}
	if !run.state.Queued {
		run.keyEvents = append(run.keyEvents, KeyEvent{Key: k, Outcome: KeyQueued})
	}
	run.ledger.Queued(k)
	admission.QueueWaitOnKey(w.Batch(), me, k)
	return admitted{hold: &events.RunQueuedData{EnvironmentID: run.environment, Key: k.Label,
		Running: room.Held, Limit: k.Limit, Ahead: room.Ahead,
		Reason: events.RunQueuedKeyReason(k.Label, room.Held, k.Limit, room.Ahead)}}, nil
}

// queueOnEnvironment queues on b what puts run, found without room in its
// environment, in the environment's queue: out of any key's queue first,
// for a run whose plan has limits. A run without them already in the
// queue (the run-queue reconciler offers its head every QueueInterval)
// needs nothing written.
func queueOnEnvironment(b *pgx.Batch, run *runView, me admission.Waiter) {
	if keyed(run) {
		admission.QueueLeaveKeyQueue(b, me.RunID)
	} else if run.state.Queued {
		return
	}
	admission.QueueWaitOnEnvironment(b, me)
}

// cancelVictims adds to d the CANCEL that CANCEL_OLDEST owes each of
// run's victims, one signal id per run that needs the room
// ("CANCEL_OLDEST-for-<run>", which the victim's RunCancelled reason
// names), so a round that asks again is kept once in each victim's log.
func cancelVictims(d decide.Decision, run *runView, now time.Time) decide.Decision {
	if len(run.victims) == 0 {
		return d
	}
	reason := fmt.Sprintf("cancelled by a concurrency limit under CANCEL_OLDEST: newer run %s needs its place", run.state.RunID)
	d.ToOtherRuns = slices.Clip(d.ToOtherRuns)
	for _, v := range run.victims {
		d.ToOtherRuns = append(d.ToOtherRuns, decide.CancelSignal(v, "CANCEL_OLDEST-for-"+run.state.RunID, reason, now))
	}
	return d
}

// endedKeyed returns the runs of the batch's decisions that end a run
// holding concurrency slots, in run id order, whose slots
// admission.QueueReleaseKeys gives back.
func endedKeyed(rounds []Round, results []Result, runs map[string]*runView) []string {
	var ids []string
	for i, r := range rounds {
		run := runs[r.RunID]
		if run.err == nil && keyed(run) && endsRun(results[i].Decision) {
			ids = append(ids, r.RunID)
		}
	}
	slices.SortFunc(ids, strings.Compare)
	return slices.Compact(ids)
}

// released calls Config.Released when a committed batch gave slots back.
func (x *Runner) released(rounds []Round, results []Result, runs map[string]*runView) {
	if x.cfg.Released != nil && runs != nil && len(endedKeyed(rounds, results, runs)) > 0 {
		x.cfg.Released()
	}
}

// endsRun reports whether d ends its run.
func endsRun(d decide.Decision) bool {
	return slices.ContainsFunc(d.Events, func(e events.Spec) bool {
		return e.Type == events.RunCompleted || e.Type == events.RunFailed || e.Type == events.RunCancelled
	})
}

// KeyEvent is what a round's admission did under one of a plan's
// concurrency limits, which the engine counts (weft.admission.key.*).
type KeyEvent struct {
	Key     admission.Key
	Outcome KeyOutcome
	// Waited is, for KeyAdmitted, how long the run waited in the key's
	// queue (zero: it did not); Count is, for KeyCancelled, how many runs
	// the limit cancelled.
	Waited time.Duration
	Count  int
}

// KeyOutcome is a KeyEvent's outcome.
type KeyOutcome string

// The outcomes.
const (
	KeyAdmitted  KeyOutcome = "admitted"  // the run took the key's place
	KeyQueued    KeyOutcome = "queued"    // the run began waiting in the key's queue
	KeyCancelled KeyOutcome = "cancelled" // CANCEL_NEWEST cancelled the run, or CANCEL_OLDEST asked Count runs to cancel
)

// admitted is what admission makes of a start: queue it (hold, the limit
// that holds it), delay its dispatch until a time, refuse it (cancel it,
// with the reason), or none of these: start it.
type admitted struct {
	hold       *events.RunQueuedData
	delayUntil time.Time
	refuse     string
}

// apply sets a's verdict on the fields of a start's input.
func (a admitted) apply(full *bool, hold *events.RunQueuedData, delayUntil *time.Time, refuse *string) {
	*full, *delayUntil, *refuse = a.hold != nil, a.delayUntil, a.refuse
	if a.hold != nil {
		*hold = *a.hold
	}
}
