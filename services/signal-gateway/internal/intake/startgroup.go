package intake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/internal/store/pipetx"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
)

// startCall is one start on its way through a group (grouper): the start
// checked and authorized, its run request (a plain start's,
// RepeatMustMatch), and the answer, res or err (waiter).
type startCall struct {
	waiter
	start runstart.Request
	rr    runRequest
	res   RunResult
}

// newStartCall makes start's call; the bus copy of its RunApproved
// carries ctx's span context, whichever call's context its group runs on.
func newStartCall(ctx context.Context, start runstart.Request) *startCall {
	start.Trace = trace.SpanContextFromContext(ctx)
	return &startCall{waiter: waiter{ctx: ctx}, start: start, rr: newRunRequest(start, RepeatMustMatch)}
}

func (c *startCall) waiting() *waiter { return &c.waiter }

// groupKey keeps two starts of one run request out of one group: the
// second must see the first committed to answer with its run.
func (c *startCall) groupKey() string { return string(c.rr.key) }

// startGroup starts the runs of group in one transaction (startGroupTx)
// and sets their answers; a group of one is a start alone (startAlone).
// The transaction runs on a context that ends only once every call's
// has. After a fault before the COMMIT went out (a deadlock with another
// writer, a lost connection, ErrCheckAlone), nothing was committed, and
// each start is made again alone, on its own context. After a fault of
// the COMMIT, whether it committed is not known: each start that claimed
// its run request is answered with the fault (ConnectionLost reports a
// lost connection; a retry with the same run request id finds out), and
// each repeat of an earlier start keeps its answer.
func (in *Intake) startGroup(group []*startCall) {
	if len(group) == 1 {
		c := group[0]
		c.res, c.err = in.startAlone(c.ctx, c.start)
		return
	}
	ctx, stop := groupContext(group)
	err := in.journal.Run(ctx, in.pool, func(w *journal.Write) error {
		return in.startGroupTx(ctx, w, group)
	})
	stop()
	if err == nil {
		return
	}
	if _, commitSent := errors.AsType[*pipetx.CommitError](err); commitSent {
		for _, c := range group {
			if c.res.Created {
				c.res, c.err = RunResult{}, err
			}
		}
		return
	}
	for _, c := range group {
		c.res, c.err = in.startAlone(c.ctx, c.start)
	}
}

// startGroupTx claims the run requests of calls in one round trip (with
// BEGIN), in key order, as every group does, so that two groups claiming
// the same requests wait for each other instead of deadlocking. A call
// whose request an earlier start holds is answered with that start's run
// (duplicateStart, round trips of its own); the runs of the others are
// approved together in two more (runstart.Approver.ApproveIn), the last
// with the COMMIT of w's transaction, which is w's own. The answers it
// sets stand only if it commits.
func (in *Intake) startGroupTx(ctx context.Context, w *journal.Write, calls []*startCall) error {
	tx := w.Tx()
	calls = slices.SortedFunc(slices.Values(calls), func(a, b *startCall) int { return bytes.Compare(a.rr.key, b.rr.key) })
	b := &pgx.Batch{}
	now := in.now()
	claimed := make([]bool, len(calls))
	for i, c := range calls {
		c.start.RunID = events.NewRunID()
		in.queueClaim(b, c.start, c.rr, c.start.RunID, now, &claimed[i])
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("intake: claim run requests: %w", err)
	}
	var fresh []runstart.Request
	for i, c := range calls {
		if !claimed[i] {
			var err error
			if c.res, err = in.duplicateStart(ctx, tx, c.start, c.rr, RepeatMustMatch); err != nil {
				return err
			}
			continue
		}
		fresh = append(fresh, c.start)
		c.res = created(c.start)
	}
	if len(fresh) == 0 {
		return nil
	}
	_, err := in.approver.ApproveIn(ctx, w, fresh...)
	return err
}
