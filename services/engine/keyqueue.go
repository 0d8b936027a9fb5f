package engine

import (
	"context"
	"slices"
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
// may be more: it reads the offers they make (admission.OffersTx), runs
// the start rounds of every waiter offered, in batches of QueueBatch,
// and then deletes their wakes. A failure leaves the wakes for the next
// pass.
func (s *Service) serveKeyWakes(ctx context.Context) bool {
	wakes, err := admission.Wakes(ctx, s.pool, s.cfg.QueueBatch)
	if err == nil && len(wakes) > 0 {
		err = s.serve(ctx, wakes)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.logger.WarnContext(ctx, "engine: serving the key queues failed; their wakes stay", "err", err)
		}
		return false
	}
	return len(wakes) == s.cfg.QueueBatch
}

func (s *Service) serve(ctx context.Context, wakes []admission.Wake) error {
	var offers []admission.Offer
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		offers, err = admission.OffersTx(ctx, tx, wakes, s.cfg.QueueBatch)
		return err
	})
	if err != nil || len(offers) == 0 {
		return err
	}
	now := time.Now().UTC()
	var rounds []round.Round
	served := make([]admission.Wake, len(offers))
	for i, o := range offers {
		served[i] = o.Wake
		for _, id := range o.RunIDs {
			rounds = append(rounds, round.Round{RunID: id, Input: decide.RunApproved{Now: now}})
		}
	}
	for chunk := range slices.Chunk(rounds, s.cfg.QueueBatch) {
		if _, err := s.runner.RunBatch(ctx, chunk); err != nil {
			return err
		}
	}
	return admission.DoneWakes(ctx, s.pool, served)
}
