// Package runstart approves runs: it validates a plan and appends the new
// run's RunApproved event, carrying the plan, to the event log (and so, by
// the journal's outbox row, to WEFT_EVENTS, where the engine picks it up).
// The signal gateway's run-start endpoints, the dev stack and tests all
// start runs through it.
package runstart

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/internal/admission"
	"github.com/weftrun/weft/internal/journal"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// Request is a run to approve.
type Request struct {
	TenantID, ProjectID, EnvironmentID string
	// RunRequestID is the caller's id for this start; the gateway makes
	// starts idempotent on it (execution-semantics §3).
	RunRequestID string
	// Plan is the validated plan; ApproveTx refuses one that is not valid.
	Plan *plan.Plan
	// Input is the run's input document, references only.
	Input json.RawMessage
	// RunID is the new run's id, a UUIDv7 from events.NewRunID; empty
	// means a fresh one. The gateway picks it before approving, to record
	// it with the run request in the same transaction.
	RunID string
}

// Approver approves runs. The zero Plans and Admission mean the default
// plan limits and no limit of concurrent runs.
type Approver struct {
	Journal   *journal.Journal
	Plans     plan.Limits
	Admission admission.Limits
}

// ApproveTx gives the run its id, appends its RunApproved and registers
// it in engine_runs, all in tx, and returns the run id. Nothing is written
// for an invalid plan (a *plan.ValidationError) or, under the REJECT
// policy, for an environment at its limit (an *admission.RejectedError).
func (a Approver) ApproveTx(ctx context.Context, tx pgx.Tx, req Request) (string, error) {
	if req.Plan == nil {
		return "", fmt.Errorf("runstart: no plan")
	}
	req.Plan.ApplyDefaults()
	if err := req.Plan.Validate(a.Plans); err != nil {
		return "", err
	}
	if err := admission.CheckRejectTx(ctx, tx, req.EnvironmentID, a.Admission.For(req.EnvironmentID)); err != nil {
		return "", err
	}
	planJSON, err := json.Marshal(req.Plan)
	if err != nil {
		return "", fmt.Errorf("runstart: encode plan: %w", err)
	}
	runID := cmp.Or(req.RunID, events.NewRunID())
	ev, err := events.New(events.Spec{
		RunID: runID, Type: events.RunApproved, PlanVersion: req.Plan.PlanVersion,
		Data: events.RunApprovedData{
			TenantID: req.TenantID, ProjectID: req.ProjectID, EnvironmentID: req.EnvironmentID,
			PlanID: req.Plan.PlanID, PlanVersion: req.Plan.PlanVersion, RunRequestID: req.RunRequestID,
			Input: req.Input, Plan: planJSON,
		},
	})
	if err != nil {
		return "", err
	}
	head := int64(0)
	if _, err := a.Journal.AppendTx(ctx, tx, &head, ev); err != nil {
		return "", fmt.Errorf("runstart: append RunApproved: %w", err)
	}
	// The engine's sweep finds the run here even if the bus loses the
	// RunApproved message.
	if _, err := tx.Exec(ctx, `INSERT INTO engine_runs (run_id, environment_id) VALUES ($1, $2)`, runID, req.EnvironmentID); err != nil {
		return "", fmt.Errorf("runstart: register run with the engine: %w", err)
	}
	return runID, nil
}
