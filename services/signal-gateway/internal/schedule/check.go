package schedule

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// check refuses a create or update request that breaks a rule, with an
// *intake.Error naming every field at fault (intake.Join), or one p may
// not make; otherwise it returns the schedule's definition, defaults
// applied, and its parsed expression. It reads nothing from the database
// but the registered plan version a planRef names.
func (s *Service) check(ctx context.Context, p auth.Principal, req api.ScheduleRequest) (api.Schedule, Cron, error) {
	sch := api.Schedule{
		ScheduleID: req.ScheduleID, TenantID: req.TenantID, ProjectID: req.ProjectID, EnvironmentID: req.EnvironmentID,
		Cron: req.Cron, Timezone: cmp.Or(req.Timezone, api.DefaultTimezone), Plan: req.Plan, PlanRef: req.PlanRef, Input: req.Input,
		Labels: req.Labels, Priority: req.Priority, MisfirePolicy: cmp.Or(req.MisfirePolicy, api.MisfireSkip), MaxCatchup: cmp.Or(req.MaxCatchup, api.DefaultMaxCatchup),
		OverlapPolicy: cmp.Or(req.OverlapPolicy, api.OverlapSkip),
	}
	if sch.PlanRef != nil && bytes.Equal(bytes.TrimSpace(sch.Plan), []byte("null")) {
		sch.Plan = nil // a null plan is no plan
	}
	idErr := intake.CheckResourceID("scheduleId", req.ScheduleID, api.MaxScheduleIDBytes)
	c, timingErr := s.checkTiming(sch)
	if idErr != nil {
		// The run's check holds the id in its run request id: a bad id is
		// told once, as scheduleId, not again as runRequestId.
		sch.ScheduleID = "check"
	}
	runErr := s.checkRun(ctx, p, &sch)
	sch.ScheduleID = req.ScheduleID
	if err := intake.Join(idErr, timingErr, runErr); err != nil {
		return api.Schedule{}, Cron{}, err
	}
	if err := s.authorize(ctx, p, auth.ActionRunStart, req.TenantID); err != nil {
		return api.Schedule{}, Cron{}, err
	}
	return sch, c, nil
}

// checkTiming checks the expression, the timezone and the policies, and
// refuses with the problems of all that are at fault.
func (s *Service) checkTiming(sch api.Schedule) (Cron, error) {
	c, err := s.checkCron(sch)
	return c, intake.Join(err, s.checkPolicies(sch))
}

// checkCron checks the expression and the timezone.
func (s *Service) checkCron(sch api.Schedule) (Cron, error) {
	if sch.Cron == "" {
		return Cron{}, intake.Invalid("cron", "is required: five fields, minute hour day-of-month month day-of-week")
	}
	c, err := ParseCron(sch.Cron, sch.Timezone)
	switch {
	case errors.Is(err, ErrInvalidTimezone):
		return Cron{}, intake.Invalid("timezone", "%v", err)
	case err != nil:
		return Cron{}, intake.Invalid("cron", "%v", err)
	case c.Next(s.now()).IsZero():
		return Cron{}, intake.Invalid("cron", "%q has no fire time in the next five years", sch.Cron)
	}
	return c, nil
}

// checkPolicies checks the misfire and overlap policies and maxCatchup.
func (s *Service) checkPolicies(sch api.Schedule) error {
	var misfire, overlap, catchup error
	switch sch.MisfirePolicy {
	case api.MisfireSkip, api.MisfireCatchup, api.MisfireCompress:
	default:
		misfire = intake.Invalid("misfirePolicy", "%q is not skip, catchup or compress", sch.MisfirePolicy)
	}
	switch sch.OverlapPolicy {
	case api.OverlapSkip, api.OverlapBufferOne, api.OverlapAllow, api.OverlapCancelPrevious:
	default:
		overlap = intake.Invalid("overlapPolicy", "%q is not skip, buffer-one, allow or cancel-previous", sch.OverlapPolicy)
	}
	if sch.MaxCatchup < 1 || sch.MaxCatchup > s.cfg.MaxCatchupLimit {
		catchup = intake.Invalid("maxCatchup", "must be between 1 and %d, not %d", s.cfg.MaxCatchupLimit, sch.MaxCatchup)
	}
	return intake.Join(misfire, overlap, catchup)
}

// checkRun checks the run every fire starts, as the gateway would check
// its start, and sets the schedule's planId and planVersion. A schedule by
// planRef is checked with the plan its ref resolves to now, so that a ref
// naming no version is refused at once.
func (s *Service) checkRun(ctx context.Context, p auth.Principal, sch *api.Schedule) error {
	if n := len(sch.Input); n > s.cfg.MaxInputBytes {
		return &intake.Error{Code: api.CodePayloadTooLarge,
			Message: fmt.Sprintf("input is %d bytes, more than the limit of %d", n, s.cfg.MaxInputBytes),
			Details: map[string]any{"field": "input", "limit": s.cfg.MaxInputBytes}}
	}
	if err := checkInput(sch.Input); err != nil {
		return err
	}
	if sch.PlanRef != nil {
		sch.PlanID, sch.PlanVersion = sch.PlanRef.PlanID, sch.PlanRef.PlanVersion
	} else {
		sch.PlanID, sch.PlanVersion = intake.PlanRef(sch.Plan)
	}
	// The largest input a fire can give its run: a compressed one.
	when := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	input, err := runInput(*sch, Fire{ScheduledFor: when, Window: &api.FireWindow{From: when, To: when, MissedCount: math.MaxInt32}})
	if err != nil {
		return err
	}
	start, err := intake.ResolvePlan(ctx, s.plans, p, startRequest(*sch, runRequestID(sch.ScheduleID, when), input))
	if err != nil {
		return err
	}
	return s.intake.CheckStart(start)
}

// runRequestID is a fire's run request id, "{scheduleId}:{scheduledFor}"
// in RFC 3339 UTC.
func runRequestID(scheduleID string, scheduledFor time.Time) string {
	return scheduleID + ":" + scheduledFor.UTC().Format(time.RFC3339)
}

// startRequest is the start of a run of sch, with its labels. A schedule by planRef
// starts with its ref and no planId or planVersion, which resolve sets to
// the resolved version's.
func startRequest(sch api.Schedule, requestID string, input json.RawMessage) api.StartRunRequest {
	start := api.StartRunRequest{TenantID: sch.TenantID, ProjectID: sch.ProjectID, EnvironmentID: sch.EnvironmentID,
		RunRequestID: requestID, Plan: sch.Plan, PlanRef: sch.PlanRef, Input: input, Labels: sch.Labels, Priority: sch.Priority}
	if sch.PlanRef == nil {
		start.PlanID, start.PlanVersion = sch.PlanID, sch.PlanVersion
	}
	return start
}
