package engine

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/periodic"
	"github.com/weftrun/weft/services/engine/internal/decide"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// runQueueLoop is the run-queue reconciler (execution-semantics §3): every
// QueueInterval it offers the queued runs, higher priorities first and
// the oldest first within one, up to QueueBatch, a start,
// and stops offering an environment's runs at the first that cannot start,
// so each environment's queue is served in order.
// Each offer is a round that takes the environment's admission lock,
// counts its started runs and starts the run only if there is room, so the
// check and the start commit together and two engines never start more
// than the limit, nor one run twice (the run's compare-and-swap). A run
// still without room stays queued.
func (s *Service) runQueueLoop(ctx context.Context) {
	for ctx.Err() == nil {
		queued, err := s.queuedRuns(ctx)
		if err != nil && ctx.Err() == nil {
			s.logger.WarnContext(ctx, "engine: run queue scan failed", "err", err)
		}
		full := map[string]bool{} // environments whose head of queue could not start
		for _, q := range queued {
			if !full[q.environment] && !s.offerStart(ctx, q.runID) {
				full[q.environment] = true
			}
		}
		_ = periodic.Sleep(ctx, s.cfg.QueueInterval)
	}
}

// offerStart runs a start round for a queued run and reports whether the
// run started (or is no longer waiting).
func (s *Service) offerStart(ctx context.Context, runID string) bool {
	in := decide.RunApproved{Now: time.Now().UTC()}
	out, err := s.runner.Run(ctx, round.Round{RunID: runID, Input: in})
	if err != nil {
		if ctx.Err() == nil {
			s.logger.WarnContext(ctx, "engine: starting a queued run failed", "run_id", runID, "err", err)
		}
		return false
	}
	return out.State.Status != events.RunStatusApproved || startsRun(out.Decision)
}

func startsRun(d decide.Decision) bool {
	return slices.ContainsFunc(d.Events, func(e events.Spec) bool { return e.Type == events.RunStarted })
}

type queuedRun struct{ runID, environment string }

// queuedRuns returns the queued runs in queue order, up to QueueBatch
// (engine_runs_queued).
func (s *Service) queuedRuns(ctx context.Context) ([]queuedRun, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT run_id::text, environment_id FROM engine_runs
		WHERE queued_at IS NOT NULL AND started_at IS NULL
		ORDER BY priority DESC, approved_at, run_id LIMIT $1`, s.cfg.QueueBatch)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (queuedRun, error) {
		var q queuedRun
		return q, r.Scan(&q.runID, &q.environment)
	})
}
