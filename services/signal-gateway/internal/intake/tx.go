package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/api"
)

// CheckStart refuses req with an *Error when RunStart would refuse it
// before touching the database (ids, input size, the plan against the
// plan limits, planId and planVersion against the plan's own, the input
// against the plan's input schema), and returns nil otherwise. Schedules
// and triggers check the runs they will start with it before they are
// stored; they read req's PlanID and PlanVersion from its plan (PlanRef),
// so a start without a plan is not also told it lacks them. An absent
// input is not held to the input schema here: a trigger's run's input is
// known only at each event, whose start (RunStartTx) checks it.
func (in *Intake) CheckStart(req api.StartRunRequest) error {
	if req.RunRequestID == "" {
		req.RunRequestID = "check"
	}
	_, err := in.checkStart(req, true)
	return err
}

// RunStartTx is RunStart inside the caller's transaction tx, for a start
// that must commit with other writes (a schedule's fire with its next fire
// time, a trigger event with the trigger it read). It writes in a
// savepoint: after a refusal (an *Error, as RunStart's) or a fault,
// nothing of the start is left in tx, and tx stays usable. The start is
// idempotent on its run-request tuple as RunStart's is, once tx commits;
// repeat says whether a repeat with another plan or input is refused
// with CodeIdempotencyConflict, as RunStart's is (RepeatMustMatch), or
// answered with the first start's run (RepeatOfTuple), or whether the
// start is a repeat by its run request id whatever version it resolved
// to, refused only for another input (RepeatOfRequestID).
func (in *Intake) RunStartTx(ctx context.Context, tx pgx.Tx, p auth.Principal, req api.StartRunRequest, repeat Repeat) (RunResult, error) {
	start, err := in.admitStart(ctx, p, req)
	if err != nil {
		return RunResult{}, err
	}
	var res RunResult
	err = pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		var err error
		res, err = in.startTx(ctx, sp, start, repeat, func(r runstart.Request) error {
			_, err := in.approver.ApproveTx(ctx, sp, r)
			return err
		})
		return err
	})
	if rej, ok := errors.AsType[*admission.RejectedError](err); ok {
		return RunResult{}, overloaded(rej)
	}
	return res, err
}

// SignalSendTx is SignalSend inside the caller's transaction tx, in a
// savepoint: what a refusal records (a denied signal's SignalRejected) is
// kept, anything else a refusal or fault wrote is rolled back, and tx
// stays usable. The acceptance commits with tx.
func (in *Intake) SignalSendTx(ctx context.Context, tx pgx.Tx, p auth.Principal, sig Signal) (SignalResult, error) {
	stepID, err := in.checkSignal(sig)
	if err != nil {
		return SignalResult{}, err
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return SignalResult{}, fmt.Errorf("intake: savepoint: %w", err)
	}
	c := newCall(ctx, p, sig, stepID, in.now())
	wrote, err := in.decideTx(ctx, in.journal.Begin(sp), []*call{c})
	released := false
	if err == nil && wrote {
		if err = sp.Commit(ctx); err != nil {
			err = fmt.Errorf("intake: enqueue signals' events and commit: release savepoint: %w", err)
		}
		released = err == nil
	}
	c.fail(err)
	if !released {
		if rerr := sp.Rollback(ctx); rerr != nil {
			return SignalResult{}, errors.Join(c.err, fmt.Errorf("intake: roll back savepoint: %w", rerr))
		}
	}
	return c.res, c.err
}

// PlanRef reads a plan document's planId and planVersion, for callers
// that build a start from a stored plan. A document that is not a plan
// object yields empty strings, which CheckStart then refuses.
func PlanRef(doc json.RawMessage) (id, version string) {
	var ref struct {
		PlanID      string `json:"planId"`
		PlanVersion string `json:"planVersion"`
	}
	if err := json.Unmarshal(doc, &ref); err != nil {
		return "", ""
	}
	return ref.PlanID, ref.PlanVersion
}
