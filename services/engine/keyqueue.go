package engine

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/services/engine/internal/decide"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// keyQueueLoop serves the queues of the plans' concurrency keys
// (docs/flow-control.md): a run that ends gives its slots back and
// writes a wake for each, in the transaction that ends it; this loop
// reads the wakes and offers each slot's next waiters, as many as it has
// room for, a start round, then deletes the wake. It runs at once when
// one of this engine's rounds gave slots back (round.Config.Released),
// and every QueueInterval for the wakes other engines' rounds wrote. A
// wake outlives an engine that crashed serving it: another serves it.
// Runs waiting on a key cost nothing while nothing frees: no scan reads
// them, and the sweep leaves them out (migration 0025).
func (s *Service) keyQueueLoop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for ctx.Err() == nil {
		more := s.serveKeyWakes(ctx)
		if more {
			continue
		}
		timer.Reset(s.cfg.QueueInterval)
		select {
		case <-ctx.Done():
		case <-s.keyWake:
		case <-timer.C:
		}
	}
}

// serveKeyWakes serves up to QueueBatch wakes and reports whether there
// may be more.
func (s *Service) serveKeyWakes(ctx context.Context) bool {
	wakes, err := admission.Wakes(ctx, s.pool, s.cfg.QueueBatch)
	if err != nil {
		if ctx.Err() == nil {
			s.logger.WarnContext(ctx, "engine: key queue scan failed", "err", err)
		}
		return false
	}
	for _, w := range wakes {
		if err := s.serveKeyWake(ctx, w); err != nil {
			if ctx.Err() == nil {
				s.logger.WarnContext(ctx, "engine: serving a key's queue failed; its wake stays", "err", err)
			}
			return false
		}
	}
	return len(wakes) == s.cfg.QueueBatch
}

// serveKeyWake offers w's slot's next waiters a start, in one batch of
// rounds, and then deletes the wake.
func (s *Service) serveKeyWake(ctx context.Context, w admission.Wake) error {
	var ids []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		ids, err = admission.NextWaitersTx(ctx, tx, w.Slot, s.cfg.QueueBatch)
		return err
	})
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		now := time.Now().UTC()
		rounds := make([]round.Round, len(ids))
		for i, id := range ids {
			rounds[i] = round.Round{RunID: id, Input: decide.RunApproved{Now: now}}
		}
		if _, err := s.runner.RunBatch(ctx, rounds); err != nil {
			return err
		}
	}
	return admission.DoneWake(ctx, s.pool, w)
}
