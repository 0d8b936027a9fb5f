package intake

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// Rerun starts, for p, a new run of the plan version of run req.RunID
// from step req.FromStepID (docs/api.md, "Rerun from a step"): that step
// and its descendants run anew, with req.Input when it is given and the
// source's input otherwise, and every other step's outcome in the source,
// which must be a success or a skip, is copied in at the new run's start
// (events.RerunOf). The source never changes. It is a start under the
// start's rules, idempotent on req.RunRequestID (a repeat with the same
// request answers its run), and refuses, before anything is written: a
// source that does not exist or is of another tenant (NotFound); a
// fromStepId the plan does not have, or an element of a forEach step
// (InvalidArgument); a source that has not ended, or a step to reuse that
// did not succeed or was not skipped (CodeRerunRefused); an input its plan
// refuses (InvalidArgument, its problems).
func (in *Intake) Rerun(ctx context.Context, p auth.Principal, req api.RerunRequest) (RunResult, error) {
	if err := in.checkRerun(req); err != nil {
		return RunResult{}, err
	}
	src, err := in.rerunSource(ctx, p, req.RunID)
	if err != nil {
		return RunResult{}, err
	}
	start, err := in.rerunStart(src, req)
	if err != nil {
		return RunResult{}, err
	}
	return in.startAlone(ctx, start)
}

// checkRerun refuses what can be refused in req before anything is read.
func (in *Intake) checkRerun(req api.RerunRequest) error {
	if _, err := events.ParseRunID(req.RunID); err != nil {
		return Invalid("runId", "must be a run id (a UUID in canonical, lowercase form), not %q", req.RunID)
	}
	if req.FromStepID == "" {
		return Invalid("fromStepId", "is required: the step the rerun runs anew, with its descendants")
	}
	if n := len(req.Input); n > in.cfg.MaxRunInputBytes {
		return &Error{Code: api.CodePayloadTooLarge, Message: fmt.Sprintf("input is %d bytes, more than the limit of %d", n, in.cfg.MaxRunInputBytes),
			Details: map[string]any{"field": "input", "limit": in.cfg.MaxRunInputBytes}}
	}
	return checkPlainRequestID(req.RunRequestID)
}

// rerunSourceRun is what a rerun reads of its source run.
type rerunSourceRun struct {
	approved events.RunApprovedData
	plan     plan.Validated
	steps    *plan.Plan
	snap     events.RunSnapshot
	// outcome is, for each step of the plan, the runSeq of its current
	// attempt's StepCompleted or StepSkipped, if it has one.
	outcome map[string]int64
}

// rerunSource reads run runID for a rerun by p, who must be allowed to
// start runs in its tenant; a run of another tenant is NotFound.
func (in *Intake) rerunSource(ctx context.Context, p auth.Principal, runID string) (rerunSourceRun, error) {
	evs, err := in.fetchRun(ctx, runID)
	if err != nil {
		return rerunSourceRun{}, err
	}
	var src rerunSourceRun
	if len(evs) == 0 || evs[0].EventType != events.RunApproved || evs[0].Data(&src.approved) != nil {
		return rerunSourceRun{}, runNotFound(runID)
	}
	if d := in.authz.Authorize(ctx, p, auth.ActionRunStart, auth.Resource{TenantID: src.approved.TenantID}); !d.Allowed {
		if p.TenantID != src.approved.TenantID {
			return rerunSourceRun{}, runNotFound(runID)
		}
		return rerunSourceRun{}, Denied(p, src.approved.TenantID, d)
	}
	if src.plan, err = in.plans.ParseValidated(src.approved.Plan); err != nil {
		return rerunSourceRun{}, fmt.Errorf("intake: rerun of %s: its plan: %w", runID, err)
	}
	src.steps = new(plan.Plan)
	if err = json.Unmarshal(src.plan.JSON(), src.steps); err != nil { // validated just now: its graph is all that is read
		return rerunSourceRun{}, fmt.Errorf("intake: rerun of %s: its plan: %w", runID, err)
	}
	if src.snap, err = events.Project(runID, evs); err != nil {
		return rerunSourceRun{}, fmt.Errorf("intake: rerun of %s: %w", runID, err)
	}
	src.outcome = outcomes(evs, src.snap)
	return src, nil
}

// fetchRun reads every event of run runID.
func (in *Intake) fetchRun(ctx context.Context, runID string) ([]events.Event, error) {
	var all []events.Event
	for {
		page, err := in.log.EventsFetchAfter(ctx, runID, int64(len(all)), 0)
		if err != nil {
			return nil, fmt.Errorf("intake: read run %s: %w", runID, err)
		}
		all = append(all, page...)
		if len(page) < eventlog.DefaultFetchLimit {
			return all, nil
		}
	}
}

// outcomes returns, for each step of snap, the runSeq of its current
// attempt's StepCompleted or StepSkipped in evs.
func outcomes(evs []events.Event, snap events.RunSnapshot) map[string]int64 {
	attempt := make(map[string]string, len(snap.Steps))
	for _, st := range snap.Steps {
		attempt[st.StepID] = st.LogicalAttemptID
	}
	out := map[string]int64{}
	for _, e := range evs {
		if (e.EventType == events.StepCompleted || e.EventType == events.StepSkipped) && e.LogicalAttemptID == attempt[e.StepID] {
			if _, seen := out[e.StepID]; !seen { // an attempt's first outcome is its outcome
				out[e.StepID] = e.RunSeq
			}
		}
	}
	return out
}

// rerunStart returns the start of req's rerun of src, or why it is
// refused.
func (in *Intake) rerunStart(src rerunSourceRun, req api.RerunRequest) (runstart.Request, error) {
	if !src.snap.Status.Terminal() {
		return runstart.Request{}, &Error{Code: api.CodeRerunRefused,
			Message: fmt.Sprintf("run %s is %s: a run is rerun once it has ended", req.RunID, src.snap.Status),
			Details: map[string]any{"runId": req.RunID, "status": string(src.snap.Status)}}
	}
	reuse, err := reused(src, req)
	if err != nil {
		return runstart.Request{}, err
	}
	input := req.Input
	if len(input) == 0 {
		input = src.approved.Input
	}
	if ps := inputProblems(src.plan, input); len(ps) > 0 {
		return runstart.Request{}, Problems(ps)
	}
	if err := src.plan.CheckInput(input); err != nil {
		return runstart.Request{}, Invalid("input", "%v", err)
	}
	a := src.approved
	return runstart.Request{TenantID: a.TenantID, ProjectID: a.ProjectID, EnvironmentID: a.EnvironmentID,
		RunRequestID: cmpOrNew(req.RunRequestID), Plan: src.plan, Input: input, Labels: a.Labels,
		RerunOf: &events.RerunOf{RunID: req.RunID, FromStepID: req.FromStepID, Reuse: reuse}}, nil
}

// reused returns the steps req's rerun of src copies, in plan order:
// every step but fromStepId and its descendants, each with its outcome in
// src.
func reused(src rerunSourceRun, req api.RerunRequest) ([]events.ReusedStep, error) {
	if _, ok := src.steps.Step(req.FromStepID); !ok {
		if parent, _, isElem := events.ParseChildStepID(req.FromStepID); isElem {
			if ps, ok := src.steps.Step(parent); ok && ps.ForEach != "" {
				return nil, Invalid("fromStepId", "%q is an element of forEach step %q: rerun from %q", req.FromStepID, parent, parent)
			}
		}
		return nil, Invalid("fromStepId", "run %s's plan has no step %q", req.RunID, req.FromStepID)
	}
	anew := append(src.steps.Dependants(req.FromStepID), req.FromStepID)
	var out []events.ReusedStep
	for _, id := range src.steps.TopoOrder() {
		if slices.Contains(anew, id) {
			continue
		}
		seq, ok := src.outcome[id]
		if !ok {
			return nil, &Error{Code: api.CodeRerunRefused,
				Message: fmt.Sprintf("step %q did not succeed in run %s (it is %s), and a rerun from %q would copy its outcome: rerun from %q or a step before it",
					id, req.RunID, stepStatus(src.snap, id), req.FromStepID, id),
				Details: map[string]any{"runId": req.RunID, "stepId": id, "status": string(stepStatus(src.snap, id))}}
		}
		out = append(out, events.ReusedStep{StepID: id, RunSeq: seq})
	}
	return out, nil
}

// stepStatus is step id's status in snap, PENDING when it has none.
func stepStatus(snap events.RunSnapshot, id string) events.StepStatus {
	for _, st := range snap.Steps {
		if st.StepID == id {
			return st.Status
		}
	}
	return events.StepStatusPending
}

// cmpOrNew is id, or a fresh one when it is empty (a start that is not
// idempotent).
func cmpOrNew(id string) string {
	if id == "" {
		return events.NewRunID()
	}
	return id
}

// runNotFound answers a run that does not exist or belongs to another
// tenant; the two are indistinguishable.
func runNotFound(runID string) *Error {
	return &Error{Code: api.CodeNotFound, Message: "no run " + runID, Details: map[string]any{"runId": runID}}
}
