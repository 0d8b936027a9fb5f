// Package batch settles a batch of JetStream messages the way Weft's
// consumers do: decode each message, handle the ones that ask for work in
// one call (one transaction, as a rule), and ack each message only after
// that call committed. Delivery is at least once: a message whose work
// failed comes back after RetryDelay, and one whose ack, nak or term was
// lost comes back after the consumer's AckWait, so a Handler must treat a
// message it has seen before as a duplicate.
//
// The batches come from internal/bus/shards: a Settler's Settle is the
// lanes' handler.
package batch

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Verdict says how one handled message is settled.
type Verdict int

const (
	// Nak redelivers the message after Config.RetryDelay: its work may
	// succeed later. It is the zero Verdict.
	Nak Verdict = iota
	// Ack settles the message for good: its work committed.
	Ack
	// Term settles the message for good without its work: the work can
	// never succeed, and the message is not redelivered.
	Term
)

// Handler is the work of one consumer.
type Handler[T any] interface {
	// Decode returns the item of work m asks for. work false means m asks
	// for none and is acked at once; an error means m can never be
	// handled, and it is terminated.
	Decode(m jetstream.Msg) (item T, work bool, err error)
	// Handle does the work of items, decoded from msgs (msgs[i] carries
	// items[i]), and returns one verdict per item. An error means none of
	// the work committed: every message is redelivered after RetryDelay.
	// ctx survives the end of Settle's context and ends at AckWait.
	Handle(ctx context.Context, items []T, msgs []jetstream.Msg) ([]Verdict, error)
}

// DefaultAckWait is JetStream's default AckWait.
const DefaultAckWait = 30 * time.Second

// Config configures a Settler; the zero value means the defaults.
type Config struct {
	// Name prefixes the Settler's log messages ("engine", "projector").
	Name string
	// AckWait is the consumer's AckWait: the bound of a Handle call, past
	// which the server redelivers its messages anyway. Zero means
	// DefaultAckWait.
	AckWait time.Duration
	// RetryDelay is the delay of a Nak, and of the redelivery of a batch
	// whose Handle failed. Zero redelivers at once.
	RetryDelay time.Duration
	// Logger receives the Settler's logs; nil discards them.
	Logger *slog.Logger
	// BeforeAck, when set, runs before each ack of a message Handle
	// judged Ack: after its work committed, before the server hears of it.
	// It injects crashes in tests.
	BeforeAck func()
}

// Settler settles batches with a Handler. Safe for concurrent use if its
// Handler is.
type Settler[T any] struct {
	h   Handler[T]
	cfg Config
}

// New returns a Settler of batches handled by h.
func New[T any](h Handler[T], cfg Config) *Settler[T] {
	cfg.Name = cmp.Or(cfg.Name, "batch")
	cfg.AckWait = cmp.Or(cfg.AckWait, DefaultAckWait)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Settler[T]{h: h, cfg: cfg}
}

// Settle decodes msgs, hands those that ask for work to the Handler in one
// Handle call and settles every message: Term for an undecodable one, Ack
// at once for one that asks for no work, and after Handle returns, its
// verdict for each of the others, or a Nak with RetryDelay for all of them
// if Handle failed. The end of ctx does not cut Handle short: it runs to
// its return or AckWait. A failure to settle is logged; the message comes
// back after AckWait.
func (s *Settler[T]) Settle(ctx context.Context, msgs []jetstream.Msg) {
	var items []T
	var held []jetstream.Msg
	for _, m := range msgs {
		item, work, err := s.h.Decode(m)
		switch {
		case err != nil:
			s.cfg.Logger.ErrorContext(ctx, s.cfg.Name+": undecodable message terminated", "subject", m.Subject(), "err", err)
			s.settle(ctx, m, Term)
		case !work:
			s.settle(ctx, m, Ack)
		default:
			items, held = append(items, item), append(held, m)
		}
	}
	if len(items) == 0 {
		return
	}
	verdicts, err := s.handle(ctx, items, held)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, s.cfg.Name+": batch failed; messages will be redelivered", "messages", len(held), "err", err)
		verdicts = make([]Verdict, len(held)) // all Nak
	}
	for i, m := range held {
		if verdicts[i] == Ack && s.cfg.BeforeAck != nil {
			s.cfg.BeforeAck()
		}
		s.settle(ctx, m, verdicts[i])
	}
}

// handle runs Handle under AckWait, detached from ctx's end, and checks
// it returned a verdict per item.
func (s *Settler[T]) handle(ctx context.Context, items []T, msgs []jetstream.Msg) ([]Verdict, error) {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.AckWait)
	defer cancel()
	verdicts, err := s.h.Handle(hctx, items, msgs)
	if err == nil && len(verdicts) != len(items) {
		err = fmt.Errorf("batch: %d verdicts for %d messages", len(verdicts), len(items))
	}
	return verdicts, err
}

// settle settles m by v and logs a failure.
func (s *Settler[T]) settle(ctx context.Context, m jetstream.Msg, v Verdict) {
	var err error
	switch v {
	case Ack:
		err = m.Ack()
	case Term:
		err = m.Term()
	default:
		err = m.NakWithDelay(s.cfg.RetryDelay)
	}
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, s.cfg.Name+": settling a message failed", "subject", m.Subject(), "err", err)
	}
}
