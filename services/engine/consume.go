package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/internal/bus/lanes"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// Durable consumer names, shared by every engine process.
const (
	EventsConsumer  = "engine-events"
	ResultsConsumer = "engine-results"
)

// toRoundFunc maps one message to the round it asks for. ok false means the
// message needs no round (an event the engine does not react to); an error
// means the message can never be handled and is terminated.
type toRoundFunc func(m jetstream.Msg) (r round.Round, ok bool, err error)

func (s *Service) startConsumers(ctx context.Context) ([]*lanes.Lanes, error) {
	events, err := s.consume(ctx, streams.EventsStream, EventsConsumer, streams.EventsSubjectPrefix+".*", eventRound)
	if err != nil {
		return nil, err
	}
	results, err := s.consume(ctx, streams.ResultsStream, ResultsConsumer, streams.ResultsSubjectPrefix+".*", s.resultRound)
	if err != nil {
		_ = events.Stop(context.WithoutCancel(ctx)) // never cut short: its context does not end
		return nil, err
	}
	return []*lanes.Lanes{events, results}, nil
}

// consume creates (or updates) the durable consumer and feeds it to
// Concurrency lanes (internal/bus/lanes): one engine handles a run's messages
// one batch at a time, in the order JetStream delivers them, so a worker's
// StepStarted is recorded before its StepCompleted and rounds of one run
// rarely race. Rounds of different runs run in parallel. The lanes keep the
// consumer (streams.Keeper): deleted, it is created again. The keeper's
// metrics are unregistered when ctx ends.
func (s *Service) consume(ctx context.Context, stream, durable, filter string, toRound toRoundFunc) (*lanes.Lanes, error) {
	keeper, err := streams.NewKeeper(s.js, stream, jetstream.ConsumerConfig{
		Durable:       durable,
		FilterSubject: filter,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.cfg.AckWait,
		MaxAckPending: s.cfg.Concurrency * 32,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}, streams.KeeperConfig{Logger: s.logger, MeterProvider: s.cfg.MeterProvider})
	if err != nil {
		return nil, fmt.Errorf("engine: consumer %s: %w", durable, err)
	}
	context.AfterFunc(ctx, func() { _ = keeper.Close() })
	l := lanes.New(keeper, s.cfg.Concurrency, s.cfg.MaxBatch, func(msgs []jetstream.Msg) {
		s.handleBatch(ctx, msgs, toRound)
	})
	// The lanes outlive ctx by their drain (the engine's run loop stops
	// them once ctx ends): ending Start's context would be a hard stop.
	if err := l.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("engine: %s: %w", durable, err)
	}
	return l, nil
}

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
