package engine

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/services/engine/internal/round"
)

// Durable consumer name prefixes: partition p's consumers are
// EventsConsumer-<p> and ResultsConsumer-<p> (PartitionConsumer).
const (
	EventsConsumer  = "engine-events"
	ResultsConsumer = "engine-results"
)

// toRoundFunc maps one message to the round it asks for. ok false means the
// message needs no round (an event the engine does not react to); an error
// means the message can never be handled and is terminated.
type toRoundFunc func(m jetstream.Msg) (r round.Round, ok bool, err error)

// handleBatch runs the rounds the messages ask for in one transaction
// (round.Runner.RunBatch) and settles each message: Ack after the commit,
// Term when it can never succeed, Nak with a delay when it may succeed
// later. Messages that need no round are acked at once. Rounds are not cut
// short by the engine's shutdown: they run to their commit or their
// AckWait.
func (s *Service) handleBatch(ctx context.Context, msgs []jetstream.Msg, toRound toRoundFunc) {
	var rounds []round.Round
	var held []jetstream.Msg
	var spans roundSpans
	for _, m := range msgs {
		r, ok, err := toRound(m)
		switch {
		case err != nil:
			s.logger.ErrorContext(ctx, "engine: undecodable message terminated", "subject", m.Subject(), "err", err)
			s.settle(ctx, m.Term())
		case !ok:
			s.settle(ctx, m.Ack())
		default:
			r.Trace = spans.start(ctx, s.tracer, m, r.RunID)
			rounds, held = append(rounds, r), append(held, m)
		}
	}
	if len(rounds) == 0 {
		return
	}
	var results []round.Result
	defer func() { spans.end(results) }()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.AckWait)
	defer cancel()
	results, err := s.runner.RunBatch(rctx, rounds)
	if err != nil {
		s.logger.WarnContext(ctx, "engine: rounds cut short; messages will be redelivered", "rounds", len(rounds), "err", err)
		for _, m := range held {
			s.settle(ctx, m.NakWithDelay(s.cfg.RetryDelay))
		}
		return
	}
	for i, res := range results {
		s.settleRound(spans.context(ctx, i), held[i], rounds[i], res)
	}
}

// settleRound settles one message after its round committed, or failed.
func (s *Service) settleRound(ctx context.Context, m jetstream.Msg, r round.Round, res round.Result) {
	switch {
	case errors.Is(res.Err, round.ErrUnknownRun):
		s.logger.WarnContext(ctx, "engine: message for an unknown run terminated", "run_id", r.RunID, "err", res.Err)
		s.settle(ctx, m.Term())
		return
	case res.Err != nil:
		s.logger.WarnContext(ctx, "engine: round failed; message will be redelivered", "run_id", r.RunID, "err", res.Err)
		s.settle(ctx, m.NakWithDelay(s.cfg.RetryDelay))
		return
	}
	if n := len(res.Decision.Cancels); n > 0 {
		// The round's cancel notice went to the outbox with its
		// RunCancelled (round.cancelMessages); the relay publishes it.
		s.logger.InfoContext(ctx, "engine: run cancelled; cancel notice queued in the outbox", "run_id", r.RunID, "steps", n)
	}
	if s.cfg.TestingKnobs.AfterCommit != nil {
		s.cfg.TestingKnobs.AfterCommit()
	}
	s.settle(ctx, m.Ack())
}

// settle logs a failed ack, nak or term. Nothing else is needed: the
// message comes back after AckWait and its round takes the fast path.
func (s *Service) settle(ctx context.Context, err error) {
	if err != nil {
		s.logger.WarnContext(ctx, "engine: settling a message failed", "err", err)
	}
}
