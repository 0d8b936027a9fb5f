package schedule

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// outcome is what applying a decision did.
type outcome struct {
	started, duplicates int
	lastRunID           string
	lastFireAt          *time.Time
	// skips are the decision's skips and the refused starts, recorded at
	// the fire's time.
	skips []api.SkippedFires
}

// principal is who a schedule's fires act as: an operator of its tenant,
// named after the schedule in the authorizer's and the log's eyes.
func principal(r *record) auth.Principal {
	return auth.Principal{KeyID: "schedule:" + r.ScheduleID, TenantID: r.TenantID, Role: auth.RoleOperator}
}

// applyTx starts the decision's runs in tx, each through the gateway's
// idempotent start: a fire whose run request id already has a run
// (another scheduler's, or a replay's) counts as a duplicate and its run
// becomes the last run. A start the gateway refuses for good is recorded
// as a skip with reason refused; one refused as Overloaded ends the fire
// with an *backoffError, so that nothing of it commits.
func (s *Service) applyTx(ctx context.Context, tx pgx.Tx, r *record, d Decision, now time.Time) (outcome, error) {
	out := outcome{lastRunID: r.LastRunID, lastFireAt: r.LastFireAt, skips: d.Skips}
	p := principal(r)
	for _, a := range d.Actions {
		if a.CancelPrevious && out.lastRunID != "" {
			if err := s.cancelTx(ctx, tx, p, r, out.lastRunID, a.Fire); err != nil {
				return out, err
			}
		}
		res, err := s.startTx(ctx, tx, p, r, a.Fire)
		if e, ok := errAs(err); ok {
			if e.Code == api.CodeOverloaded {
				return out, &backoffError{retryAt: now.Add(e.RetryAfter), cause: err}
			}
			out.skips = append(out.skips, api.SkippedFires{Reason: api.SkipRefused, From: a.Fire.ScheduledFor,
				To: a.Fire.ScheduledFor, Count: 1, Message: e.Error()})
			continue
		}
		if err != nil {
			return out, err
		}
		if res.Duplicate {
			out.duplicates++
		} else {
			out.started++
		}
		at := a.Fire.ScheduledFor
		out.lastRunID, out.lastFireAt = res.RunID, &at
	}
	return out, nil
}

// startTx starts the run of fire f of r in tx, refused like a start when
// r's input cannot make the run's input or r's planRef does not resolve
// now (its version archived, say).
func (s *Service) startTx(ctx context.Context, tx pgx.Tx, p auth.Principal, r *record, f Fire) (intake.RunResult, error) {
	input, err := runInput(r.Schedule, f)
	if err != nil {
		return intake.RunResult{}, err
	}
	start, err := intake.ResolvePlan(ctx, s.plans, p, startRequest(r.Schedule, runRequestID(r.ScheduleID, f.ScheduledFor), input))
	if err != nil {
		return intake.RunResult{}, err
	}
	return s.intake.RunStartTx(ctx, tx, p, start, intake.RepeatOfTuple)
}

// cancelTx sends runID the CANCEL of cancel-previous, through the
// gateway's signal path, idempotent on a signal id derived from the fire.
// A refusal (the run is gone, say) is logged and the fire goes on.
func (s *Service) cancelTx(ctx context.Context, tx pgx.Tx, p auth.Principal, r *record, runID string, f Fire) error {
	id := "schedule:" + runRequestID(r.ScheduleID, f.ScheduledFor)
	_, err := s.intake.SignalSendTx(ctx, tx, p, intake.Signal{RunID: runID, Name: plan.SignalCancel, ID: &id})
	if e, ok := errAs(err); ok {
		s.logger.WarnContext(ctx, "cancel-previous: the CANCEL was refused", "tenant_id", r.TenantID,
			"schedule_id", r.ScheduleID, "run_id", runID, "code", e.Code, "reason", e.Message)
		return nil
	}
	return err
}

// saveTx writes the schedule's state after a fire and releases its claim.
func (s *Service) saveTx(ctx context.Context, tx pgx.Tx, r *record, d Decision, out outcome, now time.Time) error {
	var counts api.SkipCounts
	recent := r.RecentSkips
	for _, sk := range out.skips {
		sk.RecordedAt = now
		recent = append(recent, sk)
		switch sk.Reason {
		case api.SkipMisfire:
			counts.Misfire += sk.Count
		case api.SkipOverlap:
			counts.Overlap += sk.Count
		case api.SkipCatchupLimit:
			counts.CatchupLimit += sk.Count
		case api.SkipRefused:
			counts.Refused += sk.Count
		}
	}
	recent = recent[max(0, len(recent)-MaxRecentSkips):]
	skipsJSON, err := json.Marshal(recent)
	if err != nil {
		return fmt.Errorf("schedule: encode skips: %w", err)
	}
	var next, bufferedFor *time.Time
	var bufferedWindow any
	if !d.NextFireAt.IsZero() {
		next = &d.NextFireAt
	}
	if d.Buffered != nil {
		bufferedFor = &d.Buffered.ScheduledFor
		if d.Buffered.Window != nil {
			bufferedWindow = d.Buffered.Window
		}
	}
	var lastRun any
	if out.lastRunID != "" {
		lastRun = out.lastRunID
	}
	_, err = tx.Exec(ctx, `
		UPDATE schedules SET next_fire_at = $3, buffered_for = $4, buffered_window = $5, last_run_id = $6,
		    last_fire_at = $7, skipped_misfire = skipped_misfire + $8, skipped_overlap = skipped_overlap + $9,
		    skipped_catchup_limit = skipped_catchup_limit + $10, skipped_refused = skipped_refused + $11,
		    recent_skips = $12, claim_token = NULL, claimed_until = NULL
		WHERE tenant_id = $1 AND schedule_id = $2`,
		r.TenantID, r.ScheduleID, next, bufferedFor, bufferedWindow, lastRun, out.lastFireAt,
		counts.Misfire, counts.Overlap, counts.CatchupLimit, counts.Refused, skipsJSON)
	if err != nil {
		return fmt.Errorf("schedule: save %s: %w", r.ScheduleID, err)
	}
	return nil
}
