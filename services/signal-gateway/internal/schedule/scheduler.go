package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/periodic"
)

// Run fires due schedules every PollInterval until ctx ends. A failed
// poll is logged and retried at the next one. Any number of gateways may
// run it against one database: the claim keeps them off each other's
// schedules.
func (s *Service) Run(ctx context.Context) {
	loop := periodic.Loop{Interval: s.cfg.PollInterval, Immediate: true, Logger: s.logger, Failed: "scheduler poll failed"}
	loop.Run(ctx, func(ctx context.Context) error {
		_, err := s.Tick(ctx)
		return err
	})
}

// Tick claims the schedules due now, a batch at a time, and fires each
// claimed one; it returns how many it fired. A schedule whose fire fails
// keeps its claim until the lease runs out, which is its backoff.
func (s *Service) Tick(ctx context.Context) (int, error) {
	fired := 0
	for {
		keys, token, err := s.claim(ctx)
		if err != nil {
			return fired, err
		}
		for _, k := range keys {
			ok, err := s.fire(ctx, k, token)
			if err != nil {
				if ctx.Err() != nil {
					return fired, ctx.Err()
				}
				s.logger.WarnContext(ctx, "schedule fire failed; retried when its claim expires",
					"tenant_id", k.TenantID, "schedule_id", k.ScheduleID, "err", err)
				continue
			}
			if ok {
				fired++
			}
		}
		if len(keys) < s.cfg.Batch {
			return fired, nil
		}
	}
}

// claim takes up to Batch schedules that are due (or hold a buffered fire
// whose previous run has ended), are not paused and are not claimed by a
// live lease, and leases them to the token it returns. Two schedulers
// claiming at once take disjoint sets (FOR UPDATE SKIP LOCKED).
func (s *Service) claim(ctx context.Context) ([]Key, string, error) {
	now := s.now()
	token := events.NewRunID()
	rows, err := s.pool.Query(ctx, `
		UPDATE schedules SET claim_token = $1, claimed_until = $2
		WHERE (tenant_id, schedule_id) IN (
		    SELECT tenant_id, schedule_id FROM schedules sc
		    WHERE NOT paused AND (claimed_until IS NULL OR claimed_until <= $3)
		      AND (next_fire_at <= $3 OR (buffered_for IS NOT NULL
		           AND NOT EXISTS (SELECT 1 FROM engine_runs r WHERE r.run_id = sc.last_run_id)))
		    ORDER BY next_fire_at NULLS LAST LIMIT $4
		    FOR UPDATE SKIP LOCKED)
		RETURNING tenant_id, schedule_id`, token, now.Add(s.cfg.Lease), now, s.cfg.Batch)
	if err != nil {
		return nil, "", fmt.Errorf("schedule: claim: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Key, error) {
		var k Key
		return k, r.Scan(&k.TenantID, &k.ScheduleID)
	})
	if err != nil {
		return nil, "", fmt.Errorf("schedule: claim: %w", err)
	}
	return keys, token, nil
}

// backoffError is a fire the gateway asked to retry later (the environment
// is at its limit of concurrent runs): nothing of it is committed, and the
// claim is held until retryAt.
type backoffError struct {
	retryAt time.Time
	cause   error
}

func (e *backoffError) Error() string { return "backing off: " + e.cause.Error() }
func (e *backoffError) Unwrap() error { return e.cause }

// fire fires the schedule k claimed under token, in one transaction:
// lock its row and check the claim, decide, start the runs, save its
// state and release the claim. A schedule no longer claimed by token (its
// lease ran out and another scheduler took it, or it was deleted) is left
// alone, and fire reports false.
func (s *Service) fire(ctx context.Context, k Key, token string) (bool, error) {
	now := s.now()
	var out outcome
	held := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		r, err := s.claimedTx(ctx, tx, k, token)
		if err != nil || r == nil {
			return err
		}
		held = true
		d, err := s.decideTx(ctx, tx, r, now)
		if err != nil {
			return err
		}
		if out, err = s.applyTx(ctx, tx, r, d, now); err != nil {
			return err
		}
		return s.saveTx(ctx, tx, r, d, out, now)
	})
	if b, ok := errors.AsType[*backoffError](err); ok {
		_, herr := s.pool.Exec(ctx, `UPDATE schedules SET claimed_until = $4
			WHERE tenant_id = $1 AND schedule_id = $2 AND claim_token = $3`, k.TenantID, k.ScheduleID, token, b.retryAt)
		return false, errors.Join(err, herr)
	}
	if err != nil || !held {
		return false, err
	}
	s.record(ctx, k, out)
	return true, nil
}

// claimedTx locks k's row and returns it if token still holds its claim.
func (s *Service) claimedTx(ctx context.Context, tx pgx.Tx, k Key, token string) (*record, error) {
	var held bool
	err := tx.QueryRow(ctx, `SELECT claim_token IS NOT DISTINCT FROM $3::uuid FROM schedules
		WHERE tenant_id = $1 AND schedule_id = $2 FOR UPDATE`, k.TenantID, k.ScheduleID, token).Scan(&held)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !held) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("schedule: lock %s: %w", k.ScheduleID, err)
	}
	return recordGet(ctx, tx, k, false)
}

// decideTx reads whether r's last run is active and decides.
func (s *Service) decideTx(ctx context.Context, tx pgx.Tx, r *record, now time.Time) (Decision, error) {
	c, err := ParseCron(r.Cron, r.Timezone)
	if err != nil {
		return Decision{}, fmt.Errorf("schedule: %s: %w", r.ScheduleID, err)
	}
	st := State{}
	if r.NextFireAt != nil {
		st.NextFireAt = *r.NextFireAt
	}
	if r.BufferedFireAt != nil {
		st.Buffered = &Fire{ScheduledFor: *r.BufferedFireAt, Window: r.bufferedWindow}
	}
	if r.LastRunID != "" {
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM engine_runs WHERE run_id = $1)`, r.LastRunID).Scan(&st.PrevActive)
		if err != nil {
			return Decision{}, fmt.Errorf("schedule: read the last run: %w", err)
		}
	}
	p := Policy{Cron: c, Misfire: r.MisfirePolicy, MaxCatchup: r.MaxCatchup, Overlap: r.OverlapPolicy,
		Grace: s.cfg.MisfireGrace, MaxScan: s.cfg.MaxScan}
	return Decide(st, p, now), nil
}
