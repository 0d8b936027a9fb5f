// Package runstart approves runs: it appends the new run's RunApproved
// event, carrying its validated plan, to the event log (and so, by
// the journal's outbox row, to WEFT_EVENTS, where the engine picks it up).
// The signal gateway's run-start endpoints, the dev stack and tests all
// start runs through it.
package runstart

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
)

// Request is a run to approve. Its plan is a plan.Validated, which only
// validation makes: the plan of a start is validated once, where the start
// is checked (the gateway's intake, or a caller's Plan.Validated), and
// approving it does not validate it again.
type Request struct {
	TenantID, ProjectID, EnvironmentID string
	// RunRequestID is the caller's id for this start; the gateway makes
	// starts idempotent on it (execution-semantics §3).
	RunRequestID string
	// Plan is the run's plan, validated; the approval refuses the zero
	// plan.Validated. Its planId and planVersion are the run's.
	Plan plan.Validated
	// Input is the run's input document, references only.
	Input json.RawMessage
	// RunID is the new run's id, a UUIDv7 from events.NewRunID; empty
	// means a fresh one. The gateway picks it before approving, to record
	// it with the run request in the same transaction.
	RunID string
	// Trace is the span context the bus copy of the run's RunApproved
	// carries; the zero value means the span context of the ctx the
	// approval is given. Starts approved together (ApproveAllTx) each
	// keep their own.
	Trace trace.SpanContext
	// Parent is set on a child run, which a subPlan step of the run it
	// names starts (the engine's rounds, QueueChild).
	Parent *events.RunParent
	// RerunOf is set on a rerun: its source, and the outcomes its start
	// copies (the gateway's intake.Rerun).
	RerunOf *events.RerunOf
	// Labels are the run's labels, which its RunApproved carries; the
	// caller has checked them (api.CheckLabels).
	Labels map[string]string
	// Priority is the run's admission priority (api.StartRunRequest's),
	// checked by the caller; zero means the default.
	Priority int
}

// Approver approves runs. The zero Admission means no limit of concurrent
// runs.
type Approver struct {
	Journal   *journal.Journal
	Admission admission.Limits
}

// queue gives the run its id and queues on w the append of its
// RunApproved and its row in engine_runs, for a caller that sends them in
// one round trip with other statements of its transaction. Nothing is
// queued for a request without a plan or, under the REJECT policy, for an
// environment at its limit (an *admission.RejectedError); only that check
// reads, in w's transaction, at once.
func (a Approver) queue(ctx context.Context, w *journal.Write, req Request) (string, error) {
	if req.Plan.IsZero() {
		return "", fmt.Errorf("runstart: no plan")
	}
	if err := admission.CheckRejectTx(ctx, w.Tx(), req.EnvironmentID, a.Admission.For(req.EnvironmentID)); err != nil {
		return "", err
	}
	return a.QueueChild(ctx, w, req)
}

// QueueChild queues on w, as queue does, the append of req's RunApproved
// and its row in engine_runs, without the check of a rejecting admission
// limit: the engine's rounds approve the child runs of subPlan steps so,
// whose admission queues or delays them when they start (a child is never
// refused). It returns the run's id; the caller sends and commits w.
func (a Approver) QueueChild(ctx context.Context, w *journal.Write, req Request) (string, error) {
	if req.Plan.IsZero() {
		return "", fmt.Errorf("runstart: no plan")
	}
	runID := cmp.Or(req.RunID, events.NewRunID())
	ev, err := events.New(events.Spec{
		RunID: runID, Type: events.RunApproved, PlanVersion: req.Plan.PlanVersion(),
		Data: events.RunApprovedData{
			TenantID: req.TenantID, ProjectID: req.ProjectID, EnvironmentID: req.EnvironmentID,
			PlanID: req.Plan.PlanID(), PlanVersion: req.Plan.PlanVersion(), RunRequestID: req.RunRequestID,
			Input: req.Input, Plan: req.Plan.JSON(), Parent: req.Parent, RerunOf: req.RerunOf,
			Labels: req.Labels, Priority: req.Priority,
		},
	})
	if err != nil {
		return "", err
	}
	head := int64(0)
	if req.Trace.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, req.Trace)
	}
	if _, err := w.Append(ctx, &head, ev); err != nil {
		return "", fmt.Errorf("runstart: append RunApproved: %w", err)
	}
	// The engine's sweep finds the run here even if the bus loses the
	// RunApproved message.
	w.Batch().Queue(`INSERT INTO engine_runs (run_id, environment_id) VALUES ($1, $2)`, runID, req.EnvironmentID)
	return runID, nil
}

// ApproveTx approves the run in tx, in two round trips, through one
// journal.Write (journal.Journal.Begin, ApproveIn): the append of its RunApproved
// with its row in engine_runs, then its outbox row. On a *pipetx.Tx the
// outbox row goes with the transaction's COMMIT, which ends it, and the
// first round trip carries BEGIN if tx has sent nothing yet; on any other
// pgx.Tx (a savepoint, say) the transaction is the caller's to commit.
// It returns the run's id. Nothing is written for a request without a
// plan or a rejected start (an *admission.RejectedError).
func (a Approver) ApproveTx(ctx context.Context, tx pgx.Tx, req Request) (string, error) {
	ids, err := a.ApproveAllTx(ctx, tx, []Request{req})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// ErrCheckAlone refuses a group of approvals (ApproveAllTx) that holds a
// start whose environment rejects runs past its limit (ChecksAdmission):
// its check counts the environment's runs, and would not count the ones
// queued before it in the same round trip. Such a start is approved
// alone.
var ErrCheckAlone = errors.New("runstart: a start under a rejecting admission limit is approved alone")

// ChecksAdmission reports whether approving a run of environment reads
// the environment's runs first (admission.CheckRejectTx): under a
// rejecting limit.
func (a Approver) ChecksAdmission(environment string) bool {
	lim := a.Admission.For(environment)
	return lim.MaxConcurrentRuns > 0 && lim.Policy == admission.Reject
}

// ApproveAllTx approves the runs of reqs in tx as ApproveTx approves one,
// in the same two round trips however many they are: their appends with
// their rows in engine_runs, then their outbox rows (with the COMMIT on a
// *pipetx.Tx). It returns their ids, in order. An error writes none of
// them; a group of more than one that holds a start ChecksAdmission names
// is refused with ErrCheckAlone before anything is queued.
func (a Approver) ApproveAllTx(ctx context.Context, tx pgx.Tx, reqs []Request) ([]string, error) {
	return a.ApproveIn(ctx, a.Journal.Begin(tx), reqs...)
}

// ApproveIn approves the runs of reqs as ApproveAllTx does, on the
// caller's unit of work w, which it commits (journal.Write.Commit): with
// the COMMIT of w's transaction when w runs in one of its own
// (journal.Journal.Run) or on a *pipetx.Tx.
func (a Approver) ApproveIn(ctx context.Context, w *journal.Write, reqs ...Request) ([]string, error) {
	if len(reqs) > 1 && slices.ContainsFunc(reqs, func(r Request) bool { return a.ChecksAdmission(r.EnvironmentID) }) {
		return nil, ErrCheckAlone
	}
	ids := make([]string, len(reqs))
	for i, req := range reqs {
		var err error
		if ids[i], err = a.queue(ctx, w, req); err != nil {
			return nil, err
		}
	}
	if err := w.Flush(ctx); err != nil {
		return nil, fmt.Errorf("runstart: approve %s: %w", runsOf(ids), err)
	}
	if err := w.Commit(ctx); err != nil {
		return nil, fmt.Errorf("runstart: enqueue RunApproved of %s: %w", runsOf(ids), err)
	}
	return ids, nil
}

// runsOf names the runs of ids in an error.
func runsOf(ids []string) string {
	if len(ids) == 1 {
		return "run " + ids[0]
	}
	return fmt.Sprintf("%d runs (%s, ...)", len(ids), ids[0])
}

// Approve approves the run in a transaction of its own on pool, in two
// round trips: BEGIN goes out with the append, COMMIT with the outbox row
// (ApproveIn in journal.Journal.Run).
func (a Approver) Approve(ctx context.Context, pool *pgxpool.Pool, req Request) (string, error) {
	var runID string
	err := a.Journal.Run(ctx, pool, func(w *journal.Write) error {
		ids, err := a.ApproveIn(ctx, w, req)
		if err == nil {
			runID = ids[0]
		}
		return err
	})
	return runID, err
}
