package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/store/pipetx"
	"github.com/weftrun/weft/pkg/journal"
)

// decideTx decides the signals of calls, each of a run of its own, on w,
// and writes what they ask for. One batch locks their runs' heads and
// reads their states (readTx); the events and acceptance records are
// written in a second (appendTx), and the outbox rows in a third
// (journal.Write.Commit), which commits w's transaction when it is its
// own (journal.Journal.Run); a savepoint is the caller's to release. It
// reports whether it wrote: with nothing to write, w is left uncommitted.
// An error is a fault of the whole transaction, and the answers set in
// calls are void; a fault of the round trip that carried the COMMIT is a
// *pipetx.CommitError.
func (in *Intake) decideTx(ctx context.Context, w *journal.Write, calls []*call) (bool, error) {
	if err := in.readTx(ctx, w, calls); err != nil {
		return false, err
	}
	for _, c := range calls {
		if err := in.decide(c); err != nil {
			return false, err
		}
	}
	if n, err := in.appendTx(ctx, w, calls); err != nil || n == 0 {
		return false, err
	}
	if err := w.Commit(ctx); err != nil {
		return false, fmt.Errorf("intake: enqueue signals' events and commit: %w", err)
	}
	return true, nil
}

// readTx locks the heads of the calls' runs, in run id order as every
// writer that locks several runs does, and then, in statements that take
// their snapshots once the locks are held, reads each call's run and
// signal state, all in one round trip of w.
func (in *Intake) readTx(ctx context.Context, w *journal.Write, calls []*call) error {
	b := w.Batch()
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.sig.RunID
	}
	heads := queueLockRuns(b, ids)
	for _, c := range calls {
		queueSignalState(b, c.sig, c.id, c.stepID, c.now, &c.run, &c.st)
	}
	if err := w.Flush(ctx); err != nil {
		return fmt.Errorf("intake: lock runs and read signal states: %w", err)
	}
	for _, c := range calls {
		c.run.head, c.run.locked = heads[c.sig.RunID]
	}
	return nil
}

// acceptanceSQL records an acceptance. A row of the same signal can only
// be an expired one, which the new acceptance replaces.
const acceptanceSQL = `
	INSERT INTO signal_acceptances (run_id, signal_name, signal_id, version, storage_key, response, accepted_at, expires_at)
	VALUES ($1, $2, $3, 1, $4, $5, $6, $7)
	ON CONFLICT (run_id, signal_name, signal_id) DO UPDATE
	SET version = 1, storage_key = EXCLUDED.storage_key, response = EXCLUDED.response,
	    accepted_at = EXCLUDED.accepted_at, expires_at = EXCLUDED.expires_at`

// appendTx appends on w, in one round trip, the event each call's
// decision asks for, with a compare-and-swap on the head it read, and
// records each acceptance. It returns how many it appended; their outbox
// rows are still to be enqueued (Commit).
func (in *Intake) appendTx(ctx context.Context, w *journal.Write, calls []*call) (int, error) {
	var accepted []*journal.Appended
	var rejected []rejection
	n := 0
	for _, c := range calls {
		if c.ev == nil {
			continue
		}
		p, err := w.Append(trace.ContextWithSpanContext(ctx, c.trace), &c.run.head, *c.ev)
		if err != nil {
			return 0, fmt.Errorf("intake: append %s: %w", c.ev.EventType, err)
		}
		n++
		if c.err != nil { // a rejection
			rejected = append(rejected, rejection{c, p})
			continue
		}
		res := c.res.AcceptedSignalResult
		response, err := json.Marshal(res)
		if err != nil {
			return 0, fmt.Errorf("intake: encode result: %w", err)
		}
		w.Batch().Queue(acceptanceSQL, res.WorkflowID, res.SignalName, res.SignalID, res.SignalStorageKey, response, res.AcceptedAt, in.expiry(res.AcceptedAt))
		accepted = append(accepted, p)
	}
	if n == 0 {
		return 0, nil
	}
	if err := w.Flush(ctx); err != nil {
		return 0, fmt.Errorf("intake: append signals' events and record acceptances: %w", err)
	}
	for _, p := range accepted {
		if !p.Results()[0].Persisted { // the key was checked under the run lock
			return 0, errors.New("intake: SignalAccepted already in the log under a fresh storage key")
		}
	}
	markUnrecorded(rejected)
	return n, nil
}

// rejection is a call refused as denied, with the append of its
// SignalRejected.
type rejection struct {
	c *call
	p *journal.Appended
}

// markUnrecorded marks DenialUnrecorded the refusals among rejected whose
// SignalRejected the log already held (their key, run and window's),
// once their appends have their results.
func markUnrecorded(rejected []rejection) {
	for _, r := range rejected {
		if e, ok := errors.AsType[*Error](r.c.err); ok && !r.p.Results()[0].Persisted {
			e.Denial = DenialUnrecorded
		}
	}
}

// ownTx decides calls in a unit of work of their own.
func (in *Intake) ownTx(ctx context.Context, calls []*call) error {
	return in.journal.Run(ctx, in.pool, func(w *journal.Write) error {
		_, err := in.decideTx(ctx, w, calls)
		return err
	})
}

// decideGroup decides a group of calls in one transaction and sets their
// answers. The transaction runs on a context that ends only once every
// call's has, so one caller leaving does not fail the others. After a
// fault before the commit (one call's bad payload, a deadlock with
// another writer, a lost connection) it decides each call again in a
// transaction of its own, on its own context. After a fault of the
// commit, whether it committed is not known: each call that wrote is
// answered with the fault, each that only read keeps its answer.
//
// A call decided alone is decided once more, on another connection, when
// its connection was lost before the commit went out (decideAlone).
func (in *Intake) decideGroup(group []*call) {
	if len(group) == 1 {
		in.decideAlone(group[0])
		return
	}
	ctx, stop := groupContext(group)
	err := in.ownTx(ctx, group)
	stop()
	if _, unknown := errors.AsType[*pipetx.CommitError](err); err == nil || unknown {
		for _, c := range group {
			if c.ev != nil {
				c.fail(err)
			}
		}
		return
	}
	for _, c := range group {
		c.reset()
		c.fail(in.ownTx(c.ctx, []*call{c}))
	}
}

// decideAlone decides c in a transaction of its own, and once more if the
// connection was lost before the commit went out: nothing was committed.
func (in *Intake) decideAlone(c *call) {
	err := in.ownTx(c.ctx, []*call{c})
	_, commitSent := errors.AsType[*pipetx.CommitError](err)
	if retryable(c.ctx, err, commitSent) {
		in.cfg.Logger.WarnContext(c.ctx, "intake: the database connection was lost before the signal committed; trying once more",
			"run_id", c.sig.RunID, "signal_name", c.sig.Name, "signal_id", c.id, "err", err)
		c.reset()
		err = in.ownTx(c.ctx, []*call{c})
	}
	c.fail(err)
}

// groupContext returns a context with the values of the first call's that
// is canceled once every call's context has ended, and a function that
// releases it.
func groupContext[C member](group []C) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(group[0].waiting().ctx))
	var mu sync.Mutex
	left := len(group)
	stops := make([]func() bool, len(group))
	for i, c := range group {
		stops[i] = context.AfterFunc(c.waiting().ctx, func() {
			mu.Lock()
			defer mu.Unlock()
			if left--; left == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}
