package round

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// Result is the outcome of one round of a batch.
type Result struct {
	Outcome
	// Err is the round's own failure (ErrUnknownRun); a failure of the
	// whole batch is RunBatch's error instead.
	Err error
}

// RunBatch executes rounds, in order, in one transaction of three round
// trips: BEGIN with the load of all their runs; all their writes but one
// (the appends of every run, in one statement under each run's
// compare-and-swap, their timers and engine_runs rows); and the outbox
// rows of their tasks and new events, which need what the appends
// returned, with COMMIT. Many rounds so share
// one WAL flush. Rounds of one run see each other's events. Rounds with a
// Claim are not batched (use Run). When the batch fails (a conflict with
// another engine, or one round that cannot be written), it is rolled back
// and each round runs on its own with Run, so one bad round does not hold
// the others back; each Result then carries its own Err (ErrUnknownRun, or
// the round's failure). RunBatch's own error is ctx's.
func (x *Runner) RunBatch(ctx context.Context, rounds []Round) ([]Result, error) {
	var results []Result
	var runs map[string]*runView
	err := x.journal.Run(ctx, x.pool, func(w *journal.Write) error {
		var err error
		if results, runs, err = x.batch(ctx, w, rounds); err != nil {
			return err
		}
		return x.commit(ctx, w, results)
	})
	if err == nil {
		x.keepWarm(runs)
		x.released(rounds, results, runs)
		return results, nil
	}
	for _, r := range rounds {
		x.forget(r.RunID)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	conflict := errors.Is(err, eventlog.ErrConflict)
	if conflict {
		x.conflicted(ctx)
	}
	if len(rounds) == 1 && !conflict {
		return []Result{{Err: err}}, nil
	}
	results = make([]Result, len(rounds))
	for i, r := range rounds {
		results[i].Outcome, results[i].Err = x.Run(ctx, r)
	}
	return results, ctx.Err()
}

// commit commits w, the batch's unit of work: its outbox rows go with
// COMMIT, after the BeforeCommit knob when a round decided something.
func (x *Runner) commit(ctx context.Context, w *journal.Write, results []Result) error {
	if x.cfg.BeforeCommit != nil && anyDecided(results) {
		x.cfg.BeforeCommit()
	}
	return w.Commit(ctx)
}

// runView is one run as a transaction sees it: its plan, tenant,
// environment and state so far, or why it cannot be loaded.
type runView struct {
	plan        *decide.Prepared
	tenant      string
	environment string
	state       decide.State
	err         error
	cp          *checkpointView
	// keys are the run's concurrency keys (keysOf), or keysWhy why they
	// cannot be evaluated; ledger is the room of their slots its batch
	// counted (countKeys); victims are the runs its last admission asked
	// to cancel (CANCEL_OLDEST, keyRoom).
	keys      []admission.Key
	keysWhy   string
	ledger    *admission.Ledger
	victims   []string
	keyEvents []KeyEvent
}

// batch loads the rounds' runs in w's transaction, decides every round
// and sends their writes on w. It returns the results and the runs as the
// batch leaves them; w, still to commit, holds the outbox rows of the
// tasks and of the appended events.
func (x *Runner) batch(ctx context.Context, w *journal.Write, rounds []Round) ([]Result, map[string]*runView, error) {
	tx := w.Tx()
	ids := make([]string, 0, len(rounds))
	for _, r := range rounds {
		if r.Claim != nil {
			return nil, nil, fmt.Errorf("round: RunBatch cannot run a round with a Claim (run %s)", r.RunID)
		}
		if !slices.Contains(ids, r.RunID) {
			ids = append(ids, r.RunID)
		}
	}
	runs, err := x.loadRuns(ctx, tx, ids)
	if err != nil {
		return nil, nil, err
	}
	if x.cfg.AfterLoad != nil {
		x.cfg.AfterLoad()
	}
	keyed := startable(rounds, runs)
	admission.QueueLocks(w.Batch(), x.admissions(rounds, runs), keySlots(keyed))
	if err := countKeys(ctx, w, keyed); err != nil {
		return nil, nil, err
	}
	results, err := x.decideAll(ctx, w, rounds, runs)
	if err != nil {
		return nil, nil, err
	}
	if err := x.checkpointTx(ctx, tx, rounds, results, runs); err != nil {
		return nil, nil, err
	}
	return results, runs, nil
}

// decideAll decides every round on its loaded run and sends the writes
// of all of them; the appends of every round go in one statement
// (journal.Write.AppendNew). What goes to the bus, the tasks and the
// appended events, is left on w for its Commit.
func (x *Runner) decideAll(ctx context.Context, w *journal.Write, rounds []Round, runs map[string]*runView) ([]Result, error) {
	results := make([]Result, len(rounds))
	var parts []eventlog.RunAppend
	var partRounds []int
	var tasks []decide.Task
	var taskTraces []trace.SpanContext
	var cancels []decide.Cancel
	var others []events.Spec
	for i, r := range rounds {
		run := runs[r.RunID]
		if run.err != nil {
			results[i].Err = run.err
			continue
		}
		var err error
		var part eventlog.RunAppend
		if results[i].Outcome, part, err = x.step(ctx, w, r, run); err != nil {
			return nil, err
		}
		if len(part.Events) > 0 {
			part.Trace = r.Trace
			parts = append(parts, part)
			partRounds = append(partRounds, i)
		}
		d := results[i].Decision
		for _, t := range d.Tasks {
			t.TenantID = run.tenant
			tasks = append(tasks, t)
		}
		for range d.Tasks {
			taskTraces = append(taskTraces, r.Trace)
		}
		queueTimers(w.Batch(), d.Timers)
		cancels = append(cancels, d.Cancels...)
		others = append(others, d.ToOtherRuns...)
	}
	admission.QueueReleaseKeys(w.Batch(), endedKeyed(rounds, results, runs))
	up, down := upAndDown(others)
	if err := tellOthers(ctx, w, up); err != nil {
		return nil, err
	}
	if _, err := w.AppendNew(ctx, parts...); err != nil {
		return nil, err
	}
	if err := tellOthers(ctx, w, down); err != nil {
		return nil, err
	}
	if err := x.enqueueTasks(ctx, w, tasks, taskTraces, cancels); err != nil {
		return nil, err
	}
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	for p, part := range parts {
		results[partRounds[p]].Appended = len(part.Events)
	}
	return results, nil
}

// enqueueTasks makes sure the tasks' lanes exist and enqueues on w the
// tasks and the cancel notices, ahead of the events.
func (x *Runner) enqueueTasks(ctx context.Context, w *journal.Write, tasks []decide.Task, traces []trace.SpanContext, cancels []decide.Cancel) error {
	if err := x.ensureLanes(ctx, tasks); err != nil {
		return err
	}
	msgs, err := taskMessages(ctx, tasks, traces, x.cfg.TaskSigner)
	if err != nil {
		return err
	}
	cancelled, err := cancelMessages(cancels)
	if err != nil {
		return err
	}
	w.Enqueue(msgs...)
	w.Enqueue(cancelled...)
	return nil
}

// ensureLanes makes sure the lanes stream of each queue a tenant's task of
// tasks goes to exists (Config.EnsureLanes).
func (x *Runner) ensureLanes(ctx context.Context, tasks []decide.Task) error {
	if x.cfg.EnsureLanes == nil {
		return nil
	}
	done := map[string]bool{}
	for _, t := range tasks {
		if t.TenantID == "" || done[t.Queue] {
			continue
		}
		if err := x.cfg.EnsureLanes(ctx, t.Queue); err != nil {
			return fmt.Errorf("round: lanes of queue %s: %w", t.Queue, err)
		}
		done[t.Queue] = true
	}
	return nil
}

// step is one round on a loaded run: admission, the decision, and the
// run's place in engine_runs, queued on w. It returns the decision's
// events as the part to append, numbered from the run's head with the
// gap-free runSeqs the append authority will give them (the append
// refuses any other), and folds them into run's state, so a later round
// of the run in the same batch decides from them: from the decision's
// payloads, without decoding what buildEvents just encoded
// (decide.State.ApplyDecided). Tasks and timers are the caller's.
func (x *Runner) step(ctx context.Context, w *journal.Write, r Round, run *runView) (Outcome, eventlog.RunAppend, error) {
	run.victims, run.keyEvents = nil, nil
	in, err := x.admit(ctx, w, r.Input, run)
	if err == nil {
		in, err = x.withRerun(ctx, w, in, run)
	}
	if err != nil {
		return Outcome{}, eventlog.RunAppend{}, err
	}
	d, err := x.startChildren(ctx, w, r, run, run.plan.Decide(run.state, in))
	if err != nil {
		return Outcome{}, eventlog.RunAppend{}, err
	}
	d = cancelVictims(d, run, decide.Now(in))
	out := Outcome{Decision: d, Plan: run.plan.Plan, State: run.state, Keys: run.keyEvents}
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
	if run.state, err = run.state.ApplyDecided(d, evs); err != nil {
		return out, eventlog.RunAppend{}, err
	}
	run.cp.tally(evs)
	return out, eventlog.RunAppend{ExpectedHead: &head, Events: evs}, queueTrackRun(w.Batch(), r.RunID, run.environment, d)
}

// admit applies the environment's backpressure policy and the plan's
// concurrency limits to a start: when the environment has no room, QUEUE
// marks the start Full, with the limit that holds it (the run is
// queued), and DELAY gives it a DelayUntil (the run starts, its dispatch
// waits); a concurrency limit without room queues it too, or refuses it
// (keyRoom). It checks only rounds that could start an approved run, and
// then holds the admission locks until tx ends, so the check and the
// start commit together. A child run starts at once (isChild).
func (x *Runner) admit(ctx context.Context, w *journal.Write, in decide.Input, run *runView) (decide.Input, error) {
	if !mayStart(in, run) || isChild(run) {
		return in, nil
	}
	a, err := x.room(ctx, w, run, decide.Now(in))
	switch v := in.(type) {
	case decide.RunApproved:
		a.apply(&v.Full, &v.Hold, &v.DelayUntil, &v.Refuse)
		return v, err
	case decide.Resync:
		a.apply(&v.Full, &v.Hold, &v.DelayUntil, &v.Refuse)
		return v, err
	}
	return in, nil
}

// admissions returns the environments, with a limit, of the runs that a
// round of the batch may start (admit checks them), so that the batch
// takes their locks first and in one order (admission.QueueLocks): two
// batches that start runs of several environments then cannot deadlock.
func (x *Runner) admissions(rounds []Round, runs map[string]*runView) []string {
	var envs []string
	for _, r := range rounds {
		run := runs[r.RunID]
		if run.err == nil && mayStart(r.Input, run) && !isChild(run) && x.cfg.Admission.For(run.environment).MaxConcurrentRuns > 0 {
			envs = append(envs, run.environment)
		}
	}
	return envs
}

// isChild reports whether run is a child run, which its environment's
// admission limit never holds: its parent, which holds a place, waits for
// it, so holding it could hold both for ever.
func isChild(run *runView) bool { return run.state.Run.Parent.RunID != "" }

// mayStart reports whether in could start run: an APPROVED run's
// approval, or a resync of it.
func mayStart(in decide.Input, run *runView) bool {
	if run.state.Status != events.RunStatusApproved {
		return false
	}
	switch in.(type) {
	case decide.RunApproved, decide.Resync:
		return true
	}
	return false
}

// room checks the run's environment and then its concurrency limits
// (keyRoom) and returns what they make of a start now. With an
// environment limit to check, it first sends the writes queued so far,
// so that it counts the runs the batch's earlier rounds started.
func (x *Runner) room(ctx context.Context, w *journal.Write, run *runView, now time.Time) (admitted, error) {
	lim := x.cfg.Admission.For(run.environment)
	if lim.MaxConcurrentRuns > 0 {
		if err := w.Flush(ctx); err != nil {
			return admitted{}, err
		}
	}
	me := waiterOf(run)
	r, err := admission.RoomTx(ctx, w.Tx(), run.environment, lim, me.RunID, me.Priority)
	var a admitted
	switch {
	case err != nil:
		return admitted{}, err
	case r.Free():
	case lim.Policy == admission.Delay:
		a.delayUntil = now.Add(lim.DelayBy)
	default:
		queueOnEnvironment(w.Batch(), run, me)
		return admitted{hold: &events.RunQueuedData{EnvironmentID: run.environment, Running: r.Started, Limit: r.Limit, Ahead: r.Ahead,
			Reason: events.RunQueuedReason(run.environment, r.Started, r.Limit, r.Ahead)}}, nil
	}
	k, err := x.keyRoom(ctx, w, run)
	if k.hold == nil && k.refuse == "" {
		k.delayUntil = a.delayUntil
	}
	return k, err
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
