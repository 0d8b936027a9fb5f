package engine

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/periodic"
	"github.com/weftrun/weft/services/engine/internal/decide"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// dueTimer is one row of engine_timers that fell due.
type dueTimer struct {
	runID, stepID, kind string
	attempt             int
}

// timerLoop delivers due timers as rounds until ctx ends: it scans for due
// timers, runs a round for each (whose transaction deletes the timer), and
// sleeps until the next timer falls due or TimerPollInterval, whichever is
// sooner. Every engine runs the loop; a timer fired by one is gone for the
// others, whose rounds then do nothing.
func (s *Service) timerLoop(ctx context.Context) {
	for ctx.Err() == nil {
		wait := s.cfg.TimerPollInterval
		due, next, err := s.timersDue(ctx)
		if err != nil {
			s.logger.WarnContext(ctx, "engine: timer scan failed", "err", err)
		}
		for _, t := range due {
			s.fire(ctx, t)
		}
		if len(due) == s.cfg.TimerBatch {
			continue // more are due
		}
		if next > 0 {
			wait = min(wait, next)
		}
		_ = periodic.Sleep(ctx, wait)
	}
}

// timersDue returns up to TimerBatch due timers, oldest first, and how long
// until the next one that is not yet due (0 when none is).
func (s *Service) timersDue(ctx context.Context) ([]dueTimer, time.Duration, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT run_id::text, step_id, logical_attempt, kind FROM engine_timers
		WHERE due_at <= now() ORDER BY due_at LIMIT $1`, s.cfg.TimerBatch)
	if err != nil {
		return nil, 0, err
	}
	due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dueTimer, error) {
		var t dueTimer
		return t, r.Scan(&t.runID, &t.stepID, &t.attempt, &t.kind)
	})
	if err != nil {
		return nil, 0, err
	}
	var us *int64
	err = s.pool.QueryRow(ctx, `
		SELECT (extract(epoch FROM min(due_at) - clock_timestamp()) * 1e6)::bigint
		FROM engine_timers WHERE due_at > now()`).Scan(&us)
	if err != nil || us == nil {
		return due, 0, err
	}
	return due, max(time.Duration(*us)*time.Microsecond, time.Millisecond), nil
}

// fire runs the timer's round. The round first deletes the timer; when
// another engine deleted it already, the round does nothing.
func (s *Service) fire(ctx context.Context, t dueTimer) {
	claim := func(ctx context.Context, tx pgx.Tx) (bool, error) {
		tag, err := tx.Exec(ctx, `
			DELETE FROM engine_timers
			WHERE run_id = $1 AND step_id = $2 AND logical_attempt = $3 AND kind = $4 AND due_at <= now()`,
			t.runID, t.stepID, t.attempt, t.kind)
		return tag.RowsAffected() == 1, err
	}
	in := decide.TimerFired{StepID: t.stepID, LogicalAttempt: t.attempt, Kind: decide.TimerKind(t.kind),
		Jitter: rand.Float64(), Now: time.Now().UTC()}
	if in.Kind == decide.TimerHeartbeat {
		// The decider stays pure: the shell reads the heartbeat, the
		// decider compares times. An unreadable bucket fails no attempt:
		// the timer stays due and fires again at the next scan.
		last, err := s.lastHeartbeat(ctx, t.runID, t.stepID, t.attempt)
		if err != nil {
			s.logger.WarnContext(ctx, "engine: heartbeat not readable; the timer fires again", "run_id", t.runID, "step_id", t.stepID, "err", err)
			return
		}
		in.LastHeartbeat = last
	}
	if _, err := s.runner.Run(ctx, round.Round{RunID: t.runID, Input: in, Claim: claim}); err != nil {
		s.logger.WarnContext(ctx, "engine: timer round failed; will retry", "run_id", t.runID, "step_id", t.stepID, "err", err)
	}
}
