package round

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/internal/store/planversions"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// openRunSQL is the condition of an append to another run's log
// (decide.Decision.ToOtherRuns): the run has not ended. Its engine_runs
// row is inserted with its RunApproved and deleted in the round that
// appends its end (queueTrackRun), under its head lock, which the append
// takes before it reads the row.
const openRunSQL = `EXISTS (SELECT 1 FROM engine_runs WHERE run_id = $1)`

// startChildren approves on w, in the round's transaction, the child runs
// d's subPlan attempts start, and returns d with the refusal of each
// child it cannot start decided after it (decide.ChildRunRefused), so that
// the step fails in this round. A child is refused when it would nest
// deeper than Config.MaxRunDepth, when its planRef names no registered
// version of the parent's project or an archived one, when its plan does
// not validate, or when its input does not fit the plan.
func (x *Runner) startChildren(ctx context.Context, w *journal.Write, r Round, run *runView, d decide.Decision) (decide.Decision, error) {
	if len(d.Starts) == 0 {
		return d, nil
	}
	var refused []decide.Input
	for _, start := range d.Starts {
		req, why, err := x.childRequest(ctx, w, run, start)
		if err != nil {
			return d, err
		}
		if why != "" {
			refused = append(refused, decide.ChildRunRefused(start, why, decide.Now(r.Input)))
			continue
		}
		req.Trace = r.Trace
		if _, err := (runstart.Approver{Journal: x.journal}).QueueChild(ctx, w, req); err != nil {
			return d, fmt.Errorf("round: start child run %s of step %s: %w", start.RunID, start.StepID, err)
		}
	}
	if len(refused) == 0 {
		return d, nil
	}
	return run.plan.After(run.state, d, refused...), nil
}

// childRequest returns the approval of the child run start asks for, or
// why it cannot start; an error is a fault of the round.
func (x *Runner) childRequest(ctx context.Context, w *journal.Write, run *runView, start decide.ChildStart) (runstart.Request, string, error) {
	if start.Parent.Depth > x.cfg.MaxRunDepth {
		return runstart.Request{}, fmt.Sprintf("the child run would be at depth %d, more than the engine's limit of %d (MaxRunDepth)",
			start.Parent.Depth, x.cfg.MaxRunDepth), nil
	}
	doc, why, err := x.childPlan(ctx, w, run, start.Step)
	if err != nil || why != "" {
		return runstart.Request{}, why, err
	}
	v, why := x.childValidated(doc)
	if why == "" {
		why = inputMismatch(v, start.Input)
	}
	if why != "" {
		return runstart.Request{}, why, nil
	}
	parent := start.Parent
	return runstart.Request{
		TenantID: run.tenant, ProjectID: run.state.Run.ProjectID, EnvironmentID: run.environment,
		RunRequestID: start.RunRequestID, Plan: v, Input: start.Input, RunID: start.RunID, Parent: &parent,
		Labels: maps.Clone(start.Step.Labels),
	}, "", nil
}

// childValidated returns doc validated against Config.PlanLimits (once
// per document: childPlans), or why it is not valid.
func (x *Runner) childValidated(doc json.RawMessage) (plan.Validated, string) {
	v, err := x.childPlans.ParseValidated(doc)
	if err != nil {
		return plan.Validated{}, "the child's plan is not valid: " + err.Error()
	}
	return v, ""
}

// childPlan returns the plan document subPlan step ps runs: its inline
// plan, or the registered version its planRef names in the parent's
// tenant and project, resolved now ("latest": the newest not archived).
func (x *Runner) childPlan(ctx context.Context, w *journal.Write, run *runView, ps *plan.Step) (json.RawMessage, string, error) {
	if ps.PlanRef == nil {
		doc, err := json.Marshal(ps.Plan)
		return doc, "", err
	}
	if err := w.Flush(ctx); err != nil {
		return nil, "", err
	}
	ref := *ps.PlanRef
	k := planversions.Key{TenantID: run.tenant, ProjectID: run.state.Run.ProjectID, PlanID: ref.PlanID, PlanVersion: ref.PlanVersion}
	rec, err := planversions.Resolve(ctx, w.Tx(), k)
	if archived, ok := errors.AsType[*planversions.ArchivedError](err); ok {
		return nil, fmt.Sprintf("planRef %s@%s: %v: restore it, or push a new version", ref.PlanID, ref.PlanVersion, archived), nil
	}
	if errors.Is(err, planversions.ErrNotFound) {
		return nil, fmt.Sprintf("planRef %s@%s: no such plan version in project %s: push it first (POST /v1/plans)",
			ref.PlanID, ref.PlanVersion, k.ProjectID), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("round: resolve planRef %s@%s: %w", ref.PlanID, ref.PlanVersion, err)
	}
	return rec.Plan, "", nil
}

// maxMismatchesTold bounds the input problems a refusal names.
const maxMismatchesTold = 5

// inputMismatch says why input does not fit v: its input schema's
// problems, or what the plan's input checks refuse; empty when it fits.
func inputMismatch(v plan.Validated, input json.RawMessage) string {
	if found := v.CheckInputSchema(input); len(found) > 0 {
		parts := make([]string, 0, min(len(found), maxMismatchesTold))
		for _, f := range found[:min(len(found), maxMismatchesTold)] {
			parts = append(parts, fmt.Sprintf("input%s: %s: %s", f.Pointer, f.Keyword, f.Message))
		}
		return fmt.Sprintf("the child's input does not fit plan %s@%s's input schema (%s): %s",
			v.PlanID(), v.PlanVersion(), plan.CodeInputMismatch, strings.Join(parts, "; "))
	}
	if err := v.CheckInput(input); err != nil {
		return "the child's input does not fit its plan: " + err.Error()
	}
	return ""
}

// tellOthers queues on w the appends of specs, events for other runs'
// logs, each only while its run has not ended (openRunSQL).
func tellOthers(ctx context.Context, w *journal.Write, specs []events.Spec) error {
	for _, spec := range specs {
		ev, err := events.New(spec)
		if err != nil {
			return fmt.Errorf("round: build %s for run %s: %w", spec.Type, spec.RunID, err)
		}
		ev.EmittedAt = ev.EmittedAt.Truncate(time.Microsecond)
		if _, err := w.AppendIf(ctx, openRunSQL, ev); err != nil {
			return fmt.Errorf("round: append %s to run %s: %w", spec.Type, spec.RunID, err)
		}
	}
	return nil
}

// upAndDown splits specs into the events for parents (ChildRunEnded),
// which a batch appends before its own runs' events, and those for
// children (a parent's CANCEL), which it appends after: every writer so
// takes a parent's head lock before its child's.
func upAndDown(specs []events.Spec) (up, down []events.Spec) {
	for _, s := range specs {
		if s.Type == events.ChildRunEnded {
			up = append(up, s)
		} else {
			down = append(down, s)
		}
	}
	return up, down
}
