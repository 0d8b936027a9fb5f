package engine

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/internal/bus/batch"
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
// (round.Runner.RunBatch) and settles the messages by batch's policy: Ack
// after the commit, Term when a round can never succeed, Nak with
// RetryDelay when it may succeed later. Rounds are not cut short by the
// engine's shutdown: they run to their commit or their AckWait.
func (s *Service) handleBatch(ctx context.Context, msgs []jetstream.Msg, toRound toRoundFunc) {
	batch.New[round.Round](roundHandler{s: s, toRound: toRound}, batch.Config{
		Name:       "engine",
		AckWait:    s.cfg.AckWait,
		RetryDelay: s.cfg.RetryDelay,
		Logger:     s.logger,
		BeforeAck:  s.cfg.TestingKnobs.AfterCommit,
	}).Settle(ctx, msgs)
}

// roundHandler is the engine's batch.Handler: one round per message.
type roundHandler struct {
	s       *Service
	toRound toRoundFunc
}

// Decode returns the round m asks for.
func (h roundHandler) Decode(m jetstream.Msg) (round.Round, bool, error) { return h.toRound(m) }

// Handle runs the rounds in one batch, each in its span, and judges each
// message by its round's result.
func (h roundHandler) Handle(ctx context.Context, rounds []round.Round, msgs []jetstream.Msg) ([]batch.Verdict, error) {
	var spans roundSpans
	for i, m := range msgs {
		rounds[i].Trace = spans.start(ctx, h.s.tracer, m, rounds[i].RunID)
	}
	results, err := h.s.runner.RunBatch(ctx, rounds)
	if err != nil {
		spans.end(nil)
		return nil, err
	}
	verdicts := make([]batch.Verdict, len(results))
	for i, res := range results {
		verdicts[i] = h.s.judgeRound(spans.context(ctx, i), rounds[i], res)
	}
	spans.end(results)
	return verdicts, nil
}

// judgeRound returns how the message of round r is settled after the
// round committed, or failed: Term for an unknown run, Nak for another
// failure, Ack otherwise.
func (s *Service) judgeRound(ctx context.Context, r round.Round, res round.Result) batch.Verdict {
	switch {
	case errors.Is(res.Err, round.ErrUnknownRun):
		s.logger.WarnContext(ctx, "engine: message for an unknown run terminated", "run_id", r.RunID, "err", res.Err)
		return batch.Term
	case res.Err != nil:
		s.logger.WarnContext(ctx, "engine: round failed; message will be redelivered", "run_id", r.RunID, "err", res.Err)
		return batch.Nak
	}
	if n := len(res.Decision.Cancels); n > 0 {
		// The round's cancel notice went to the outbox with its
		// RunCancelled (round.cancelMessages); the relay publishes it.
		s.logger.InfoContext(ctx, "engine: run cancelled; cancel notice queued in the outbox", "run_id", r.RunID, "steps", n)
	}
	return batch.Ack
}
