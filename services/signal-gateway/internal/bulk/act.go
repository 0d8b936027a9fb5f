package bulk

import (
	"context"
	"errors"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// Reasons a run is skipped, as a job's skippedReasons counts them.
const (
	ReasonEnded      = "run has ended"
	ReasonNotRunning = "run is not RUNNING"
	ReasonNotPaused  = "run is not PAUSED"
	ReasonNotFailed  = "run is not FAILED"
	ReasonGone       = "run is no longer in the log"
)

// act takes job's action on run r as p, and counts what came of it in
// pr: done, skipped (with the reason) or failed. A run the job's signal
// reached before (a batch redone after a crash) is done, whatever its
// state is now.
func (s *Service) act(ctx context.Context, p auth.Principal, job api.BulkJob, r jobRun, pr *progress) {
	if r.acted {
		pr.done++
		return
	}
	if why := skipReason(job.Action, r); why != "" {
		pr.skip(why)
		return
	}
	err := s.do(ctx, p, job, r)
	var e *intake.Error
	switch {
	case err == nil:
		pr.done++
	case errors.As(err, &e) && e.Code == api.CodeRunTerminal:
		pr.skip(ReasonEnded)
	default:
		pr.failed++
		s.cfg.Logger.WarnContext(ctx, "bulk: action refused", "bulk_id", job.BulkID, "run_id", r.runID, "action", job.Action, "err", err)
	}
}

// skipReason says why job's action is pointless on r as its snapshot
// stands, or "".
func skipReason(action string, r jobRun) string {
	switch {
	case r.status == "":
		return ReasonGone
	case action == api.BulkCancel && r.status.Terminal():
		return ReasonEnded
	case action == api.BulkPause && r.status != events.RunStatusRunning:
		return ReasonNotRunning
	case action == api.BulkResume && r.status != events.RunStatusPaused:
		return ReasonNotPaused
	case (action == api.BulkRetryFailedSteps || action == api.BulkRerun) && (r.status != events.RunStatusFailed || len(r.failed) == 0):
		return ReasonNotFailed
	}
	return ""
}

// do sends the action's signals to r, or starts its rerun from its first
// failed step, with ids derived from the job's.
func (s *Service) do(ctx context.Context, p auth.Principal, job api.BulkJob, r jobRun) error {
	id := signalID(job.BulkID)
	switch job.Action {
	case api.BulkRerun:
		_, err := s.intake.Rerun(ctx, p, api.RerunRequest{RunID: r.runID, FromStepID: r.failed[0], RunRequestID: id + "-" + r.runID})
		return err
	case api.BulkRetryFailedSteps:
		for _, step := range r.failed {
			sid := id + "-" + step
			if _, err := s.intake.SignalSend(ctx, p, intake.Signal{RunID: r.runID, Name: "RETRY_STEP", ID: &sid, Payload: payloadOf(step)}); err != nil {
				return err
			}
		}
		return nil
	default:
		_, err := s.intake.SignalSend(ctx, p, intake.Signal{RunID: r.runID, Name: job.Action, ID: &id})
		return err
	}
}
