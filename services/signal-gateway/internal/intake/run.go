package intake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/internal/store/pipetx"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
)

// RunResult is the answer to a start: Created is false for a repeat of an
// earlier start, whose run it names.
type RunResult struct {
	api.StartRunResult
	Created bool
}

// RunStart starts a run for p, or refuses with an *Error. A start whose
// tuple (tenant, project, environment, planId, planVersion, runRequestId)
// was seen within RunRequestRetention returns that start's run, marked
// Duplicate, and starts nothing; the database's primary key on the
// tuple's SHA-256 decides, so two simultaneous starts start one run. An
// empty RunRequestID is given a fresh one, which makes the start
// non-idempotent. Under the REJECT policy an environment at its limit
// refuses with CodeOverloaded and RetryAfter.
//
// Starts made at the same time may share a transaction (grouper,
// startGroup), each claiming its run request as if alone; none is
// answered before that transaction has committed. A start in an
// environment that rejects runs past its limit is made alone, since its
// check counts the runs committed before it (runstart.ErrCheckAlone).
//
// A start whose database connection is lost before its COMMIT went out
// committed nothing, and is tried once more on another connection, with
// the same run request id. Any other loss of the connection is returned
// as it is (ConnectionLost reports it): whether the start committed is
// not known, and a retry with the same id finds out.
//
// RunStart is the plain start of the transports: a RunRequestID holding a
// ':' is refused (checkPlainRequestID), since that namespace is the
// schedules' and triggers' (RunStartTx).
func (in *Intake) RunStart(ctx context.Context, p auth.Principal, req api.StartRunRequest) (RunResult, error) {
	if err := checkPlainRequestID(req.RunRequestID); err != nil {
		return RunResult{}, err
	}
	start, err := in.admitStart(ctx, p, req)
	if err != nil {
		return RunResult{}, err
	}
	var res RunResult
	if in.approver.ChecksAdmission(start.EnvironmentID) {
		res, err = in.startAlone(ctx, start)
	} else {
		c := newStartCall(ctx, start)
		in.starts.send(c)
		res, err = c.res, c.err
	}
	if rej, ok := errors.AsType[*admission.RejectedError](err); ok {
		return RunResult{}, overloaded(rej)
	}
	return res, err
}

// startAlone starts start in a transaction of its own, and once more if
// the connection was lost before the COMMIT went out: nothing was
// committed.
func (in *Intake) startAlone(ctx context.Context, start runstart.Request) (RunResult, error) {
	res, commitSent, err := in.runStartOnce(ctx, start)
	if retryable(ctx, err, commitSent) {
		in.cfg.Logger.WarnContext(ctx, "intake: the database connection was lost before the start committed; trying once more",
			"run_request_id", start.RunRequestID, "err", err)
		res, _, err = in.runStartOnce(ctx, start)
	}
	return res, err
}

// ReservedRequestIDSeparator separates the parts of the run request ids
// of schedule fires ("{scheduleId}:{scheduledFor}") and trigger events
// ("{triggerId}:{eventId}"). Schedule and trigger ids never hold it
// (CheckResourceID), and a plain start's run request id may not
// (checkPlainRequestID), so no plain start can claim the run request of a
// fire or an event before it happens.
const ReservedRequestIDSeparator = ":"

// checkPlainRequestID refuses, as an InvalidArgument about runRequestId,
// the id of a plain start that holds ReservedRequestIDSeparator.
//
// The namespace is reserved rather than the source kind added to the
// run-request tuple: the tuple's SHA-256 is the key of every stored
// run_requests row, and a schedule fire or trigger event retried across
// the upgrade must find the row its first try stored.
func checkPlainRequestID(id string) error {
	if strings.Contains(id, ReservedRequestIDSeparator) {
		return &Error{Code: api.CodeInvalidArgument,
			Message: "runRequestId must not contain ':': ids of the form {scheduleId}:{time} and {triggerId}:{eventId} are reserved for the runs schedules and triggers start",
			Details: map[string]any{"field": "runRequestId", "reason": "reserved"}}
	}
	return nil
}

// runStartOnce is one try of RunStart, in a unit of work of its own
// (journal.Journal.Run). It reports whether the transaction's COMMIT was
// sent: its error is then a *pipetx.CommitError.
func (in *Intake) runStartOnce(ctx context.Context, start runstart.Request) (RunResult, bool, error) {
	var res RunResult
	err := in.journal.Run(ctx, in.pool, func(w *journal.Write) error {
		var err error
		res, err = in.startTx(ctx, w.Tx(), start, RepeatMustMatch, func(r runstart.Request) error {
			_, err := in.approver.ApproveIn(ctx, w, r)
			return err
		})
		return err
	})
	_, commitSent := errors.AsType[*pipetx.CommitError](err)
	return res, commitSent, err
}

// admitStart gives req a fresh RunRequestID when it has none, checks it
// and authorizes p to start it. It returns the start checked, its plan
// validated: the one value the rest of the start carries.
func (in *Intake) admitStart(ctx context.Context, p auth.Principal, req api.StartRunRequest) (runstart.Request, error) {
	if req.RunRequestID == "" {
		req.RunRequestID = events.NewRunID()
	}
	start, err := in.checkStart(req, false)
	if err != nil {
		return runstart.Request{}, err
	}
	d := in.authz.Authorize(ctx, p, auth.ActionRunStart, auth.Resource{TenantID: req.TenantID})
	if !d.Allowed {
		return runstart.Request{}, Denied(p, req.TenantID, d)
	}
	return start, nil
}

// checkStart refuses what can be refused before touching the database and
// returns the start to approve, its plan validated: the only validation
// of a start's plan. Every field is checked before a refusal, which lists
// the problems of all (startProblems, refFromPlan passed on); an input
// over its limit is refused on its own, as CodePayloadTooLarge.
func (in *Intake) checkStart(req api.StartRunRequest, refFromPlan bool) (runstart.Request, error) {
	if n := len(req.Input); n > in.cfg.MaxRunInputBytes {
		return runstart.Request{}, &Error{Code: api.CodePayloadTooLarge, Message: fmt.Sprintf("input is %d bytes, more than the limit of %d", n, in.cfg.MaxRunInputBytes),
			Details: map[string]any{"field": "input", "limit": in.cfg.MaxRunInputBytes}}
	}
	pl, ps := in.startProblems(req, refFromPlan)
	if len(ps) > 0 {
		return runstart.Request{}, Problems(ps)
	}
	return runstart.Request{TenantID: req.TenantID, ProjectID: req.ProjectID, EnvironmentID: req.EnvironmentID,
		RunRequestID: req.RunRequestID, Plan: pl, Input: req.Input, Labels: req.Labels, Priority: req.Priority}, nil
}

// startTx claims the run request of start (newRunRequest) and, with
// approve, approves its run, or finds the run of an earlier claim, in tx,
// answering a repeat as repeat says (duplicateStart). In a pipelined
// transaction, which approve commits (runstart.Approver.ApproveTx on a
// pipetx.Tx), a new start takes three round trips: BEGIN with the claim,
// the approval's writes, and its outbox row with COMMIT.
func (in *Intake) startTx(ctx context.Context, tx pgx.Tx, start runstart.Request, repeat Repeat,
	approve func(runstart.Request) error) (RunResult, error) {
	rr := newRunRequest(start, repeat)
	b := &pgx.Batch{}
	runID := events.NewRunID()
	var claimed bool
	in.queueClaim(b, start, rr, runID, in.now(), &claimed)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return RunResult{}, fmt.Errorf("intake: claim run request: %w", err)
	}
	if !claimed {
		return in.duplicateStart(ctx, tx, start, rr, repeat)
	}
	start.RunID = runID
	if err := approve(start); err != nil {
		return RunResult{}, err
	}
	return created(start), nil
}

// queueClaim queues on b the claim of start's run request rr for the new
// run runID at now, with its digest; claimed is set once b's results are
// read. A row expired but not yet removed is replaced: its start is
// forgotten, as the retention promises.
func (in *Intake) queueClaim(b *pgx.Batch, start runstart.Request, rr runRequest, runID string, now time.Time, claimed *bool) {
	b.Queue(`
		INSERT INTO run_requests (request_key, tenant_id, project_id, environment_id, plan_id, plan_version,
		                          run_request_id, run_id, created_at, expires_at, request_digest)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (request_key) DO UPDATE
		SET run_id = EXCLUDED.run_id, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at,
		    request_digest = EXCLUDED.request_digest
		WHERE run_requests.expires_at <= EXCLUDED.created_at`,
		rr.key, start.TenantID, start.ProjectID, start.EnvironmentID, start.Plan.PlanID(), rr.version,
		start.RunRequestID, runID, now, now.Add(in.cfg.RunRequestRetention), rr.digest).Exec(func(tag pgconn.CommandTag) error {
		*claimed = tag.RowsAffected() > 0
		return nil
	})
}

// created is the answer to start, whose run (start.RunID) it approved.
func created(start runstart.Request) RunResult {
	return RunResult{Created: true, StartRunResult: api.StartRunResult{RunID: start.RunID, RunRequestID: start.RunRequestID,
		Status: string(events.RunStatusApproved)}}
}

// duplicateStart answers a repeated start, of run request rr, with its
// run and that run's status now. Under RepeatMustMatch and
// RepeatOfRequestID a repeat whose request differs from the first's
// (their digests) is refused with CodeIdempotencyConflict instead; a row
// stored without a digest (before migration 0017) answers every repeat.
func (in *Intake) duplicateStart(ctx context.Context, tx pgx.Tx, start runstart.Request, rr runRequest, repeat Repeat) (RunResult, error) {
	var got api.StartRunRequest
	var runID string
	var digest []byte
	err := tx.QueryRow(ctx, `
		SELECT tenant_id, project_id, environment_id, plan_id, plan_version, run_request_id, run_id::text, request_digest
		FROM run_requests WHERE request_key = $1`, rr.key).Scan(
		&got.TenantID, &got.ProjectID, &got.EnvironmentID, &got.PlanID, &got.PlanVersion, &got.RunRequestID, &runID, &digest)
	if err != nil {
		return RunResult{}, fmt.Errorf("intake: read run request: %w", err)
	}
	if got.TenantID != start.TenantID || got.ProjectID != start.ProjectID || got.EnvironmentID != start.EnvironmentID ||
		got.PlanID != start.Plan.PlanID() || got.PlanVersion != rr.version || got.RunRequestID != start.RunRequestID {
		return RunResult{}, errors.New("intake: two run-request tuples share a SHA-256")
	}
	if repeat != RepeatOfTuple && digest != nil && !bytes.Equal(digest, rr.digest) {
		return RunResult{}, idempotencyConflict(start, runID)
	}
	status, err := in.runStatusTx(ctx, tx, runID)
	if err != nil {
		return RunResult{}, err
	}
	return RunResult{StartRunResult: api.StartRunResult{RunID: runID, RunRequestID: start.RunRequestID,
		Status: string(status), Duplicate: true}}, nil
}

// runStatusTx projects runID's log to read its status.
func (in *Intake) runStatusTx(ctx context.Context, tx pgx.Tx, runID string) (events.RunStatus, error) {
	const page = 1000
	snap := events.RunSnapshot{RunID: runID, Status: events.RunStatusPending}
	for {
		evs, err := in.log.EventsFetchAfterTx(ctx, tx, runID, snap.LastEventSeq, page)
		if err != nil {
			return "", fmt.Errorf("intake: read run: %w", err)
		}
		if snap, err = events.ProjectIncremental(snap, evs); err != nil {
			return "", fmt.Errorf("intake: project run: %w", err)
		}
		if len(evs) < page {
			return snap.Status, nil
		}
	}
}

func overloaded(rej *admission.RejectedError) *Error {
	wait := max(rej.RetryAfter, time.Second)
	return &Error{Code: api.CodeOverloaded, RetryAfter: wait,
		Message: fmt.Sprintf("environment %q is at its limit of %d concurrent runs", rej.Environment, rej.Limit),
		Details: map[string]any{"environmentId": rej.Environment, "limit": rej.Limit, "retryAfter": retryAfterSeconds(wait)}}
}
