package engine

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/periodic"
	"github.com/weftrun/weft/services/engine/internal/decide"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// sweepLoop heals what the bus lost (DESIGN.md, "The bus is a transport").
// Every SweepInterval it picks up to SweepBatch unfinished runs whose log
// has not moved for StallAfter and runs a Resync round for each: an
// approved run that never started is started, accepted signals never
// applied are applied, and tasks that look lost are sent again. Work per
// sweep is bounded by SweepBatch; a run is swept at most once per
// StallAfter, whichever engine sweeps it.
func (s *Service) sweepLoop(ctx context.Context) {
	for ctx.Err() == nil {
		runs, err := s.stalledRuns(ctx)
		if err != nil && ctx.Err() == nil {
			s.logger.WarnContext(ctx, "engine: sweep scan failed", "err", err)
		}
		for _, runID := range runs {
			s.resync(ctx, runID)
		}
		_ = periodic.Sleep(ctx, s.cfg.SweepInterval)
	}
}

// stalledRuns returns the unfinished runs that have not moved, and have not
// been swept, for StallAfter: the runs never swept first (oldest first, by
// run id), then the least recently swept. Ordered by the last move alone,
// the runs that wait quietly for long (a waitSignal step, a long
// activity), eligible again every StallAfter, would take every place of a
// sweep once there are more of them than it can sweep per StallAfter, and
// a run that lost a message would wait behind them for good; ordered so, a
// newly stalled run is swept in the next sweep, and every stalled run
// within the passes it takes to sweep each once. The order is
// engine_runs_sweep's: the scan walks that index and stops at the
// SweepBatch-th stalled run, so its cost follows the runs in flight, not
// the runs parked (migration 0014). A run waiting on a concurrency key is
// not swept: its key's wake offers it a start (keyqueue.go), and the
// index leaves it out (migration 0025).
func (s *Service) stalledRuns(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT r.run_id::text
		FROM engine_runs r JOIN run_heads h ON h.run_id = r.run_id
		WHERE h.updated_at < now() - $1::interval AND r.key_slot IS NULL
		  AND (r.swept_at IS NULL OR r.swept_at < now() - $1::interval)
		ORDER BY r.swept_at NULLS FIRST, r.run_id
		LIMIT $2`, s.cfg.StallAfter, s.cfg.SweepBatch)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// resync runs one Resync round. Its claim marks the run swept, so a second
// engine scanning at the same moment skips it.
func (s *Service) resync(ctx context.Context, runID string) {
	claim := func(ctx context.Context, tx pgx.Tx) (bool, error) {
		tag, err := tx.Exec(ctx, `
			UPDATE engine_runs SET swept_at = now()
			WHERE run_id = $1 AND (swept_at IS NULL OR swept_at < now() - $2::interval)`, runID, s.cfg.StallAfter)
		return tag.RowsAffected() == 1, err
	}
	in := decide.Resync{TaskGrace: s.cfg.TaskGrace, Now: time.Now().UTC()}
	out, err := s.runner.Run(ctx, round.Round{RunID: runID, Input: in, Claim: claim})
	if err != nil {
		s.logger.WarnContext(ctx, "engine: sweep round failed", "run_id", runID, "err", err)
		return
	}
	if !out.Decision.Empty() {
		s.logger.InfoContext(ctx, "engine: sweep re-drove a stalled run", "run_id", runID,
			"events", len(out.Decision.Events), "tasks_resent", len(out.Decision.Tasks))
	}
}
