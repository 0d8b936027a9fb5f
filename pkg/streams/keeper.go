package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/pkg/periodic"
)

// DefaultKeepInterval is how often a Keeper asks the server whether its
// consumer still exists when nothing has made it suspect so sooner.
const DefaultKeepInterval = 5 * time.Second

// Backoff between two failed attempts to create a missing consumer (its
// stream missing too, the server unreachable): doubling from
// minRecreateBackoff up to maxRecreateBackoff.
const (
	minRecreateBackoff = 100 * time.Millisecond
	maxRecreateBackoff = 5 * time.Second
)

// recreateSettle is the least wait between finding a consumer missing and
// creating it again; a random wait of up to as much again is added.
const recreateSettle = 100 * time.Millisecond

// keeperMeterName is the instrumentation scope of the keepers' metrics.
const keeperMeterName = "github.com/weftrun/weft/pkg/streams"

// KeeperConfig tunes a Keeper. The zero value of each field means its
// default.
type KeeperConfig struct {
	// Interval is how often Keep checks that the consumer exists. Default
	// DefaultKeepInterval.
	Interval time.Duration
	// Logger receives the keeper's logs. Nil discards them.
	Logger *slog.Logger
	// MeterProvider receives the consumer's metrics:
	//
	//	weft.consumer.missing      gauge    1 while the consumer is missing, else 0, by consumer
	//	weft.consumer.recreations  counter  times the consumer was found missing and created again, by consumer
	//
	// Nil records nothing.
	MeterProvider metric.MeterProvider
}

// Keeper keeps one durable consumer in existence: it creates it with its
// config, and creates it again, with the same config, whenever it finds it
// missing (deleted by an operator, or with its stream, as when `weft
// migrate` recreates the streams). Consumers feed it the errors they see
// (Suspect) and it also checks on a timer, so a consumer whose deletion no
// error reported is found too. Every Weft durable consumer goes through
// one: the engine's, the projector's and each task queue's.
//
// Its methods are safe for concurrent use.
type Keeper struct {
	js      jetstream.JetStream
	stream  string
	cfg     jetstream.ConsumerConfig
	every   time.Duration
	logger  *slog.Logger
	wake    chan struct{}
	missing atomic.Bool
	metrics keeperMetrics
}

// NewKeeper returns the keeper of the durable consumer cfg on stream. It
// registers the consumer's metrics on kc.MeterProvider; Close unregisters
// them. It fails when cfg has no durable name or the metrics cannot be
// registered.
func NewKeeper(js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig, kc KeeperConfig) (*Keeper, error) {
	if js == nil || stream == "" || cfg.Durable == "" {
		return nil, fmt.Errorf("%w: a keeper needs a JetStream context, a stream and a durable consumer", ErrInvalidConfig)
	}
	k := &Keeper{js: js, stream: stream, cfg: cfg,
		every:  cmp.Or(kc.Interval, DefaultKeepInterval),
		logger: kc.Logger,
		wake:   make(chan struct{}, 1),
	}
	if k.logger == nil {
		k.logger = slog.New(slog.DiscardHandler)
	}
	k.logger = k.logger.With("stream", stream, "consumer", cfg.Durable)
	m, err := newKeeperMetrics(kc.MeterProvider, cfg.Durable, &k.missing)
	if err != nil {
		return nil, err
	}
	k.metrics = m
	return k, nil
}

// Name is the consumer's durable name.
func (k *Keeper) Name() string { return k.cfg.Durable }

// Stream is the name of the consumer's stream.
func (k *Keeper) Stream() string { return k.stream }

// Missing reports whether the keeper last found its consumer missing and
// has not created it again since.
func (k *Keeper) Missing() bool { return k.missing.Load() }

// Ensure creates the consumer, or updates it to the keeper's config, and
// returns it. It is what a consumer does when it starts.
//
// When the server has the consumer but fails to store its config (a
// JetStream API error with code 500), Ensure returns the consumer the
// server has, with a warning: it delivers, and failing would only stop
// this process. The soak met this after a consumer was deleted and
// created again at once: nats-server 2.15 removed the new consumer's
// store folder with the old one's, answered every later create or update
// with "500 err_code=10012 open …/meta.inf.tmp: no such file or
// directory", and kept delivering from memory; a new engine or worker
// then could not start (docs/reliability.md).
func (k *Keeper) Ensure(ctx context.Context) (jetstream.Consumer, error) {
	cons, err := k.js.CreateOrUpdateConsumer(ctx, k.stream, k.cfg)
	if err == nil {
		return cons, nil
	}
	err = fmt.Errorf("streams: consumer %s on %s: %w", k.cfg.Durable, k.stream, err)
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.Code == 500 {
		if existing, gerr := k.js.Consumer(ctx, k.stream, k.cfg.Durable); gerr == nil {
			k.logger.WarnContext(ctx, "streams: the server failed to store the consumer's config; using the consumer it has", "err", err)
			return existing, nil
		}
	}
	return nil, err
}

// Start creates the consumer, or updates it, when a service starts. A
// failure that may be transient (its stream not there yet, the server
// unreachable or failing to store the consumer: any error but a config the
// server rejects for good) does not fail the start: Start logs it at warn,
// marks the consumer missing, and returns a nil consumer and a nil error;
// Keep then creates it with its backoff and passes it to its recreated
// func, as for a consumer deleted later. Start returns an error only when
// ctx ends or the config is rejected for good (a JetStream API error with
// code 400, or a name nats.go refuses).
func (k *Keeper) Start(ctx context.Context) (jetstream.Consumer, error) {
	cons, err := k.Ensure(ctx)
	if err == nil {
		return cons, nil
	}
	if ctx.Err() != nil || rejected(err) {
		return nil, err
	}
	k.missing.Store(true)
	k.logger.WarnContext(ctx, "streams: creating the consumer at start failed; the service starts and creates it in the background", "err", err)
	return nil, nil
}

// rejected reports whether err is a refusal of the consumer's config that
// no retry can change: a JetStream API error with code 400 (bad request,
// invalid config), or a stream, consumer or subject name nats.go refuses.
func rejected(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code == 400
	}
	return errors.Is(err, jetstream.ErrInvalidStreamName) ||
		errors.Is(err, jetstream.ErrInvalidConsumerName) ||
		errors.Is(err, jetstream.ErrInvalidSubject) ||
		errors.Is(err, jetstream.ErrConsumerMultipleFilterSubjectsNotSupported)
}

// Suspect asks Keep to check the consumer now, without waiting for its
// interval, when err is one a missing consumer causes: the consumer
// deleted or not found, its stream not found, a pull answered by no one,
// missed heartbeats. Other errors, and nil, are ignored. It never blocks.
func (k *Keeper) Suspect(err error) {
	if !mayBeMissing(err) {
		return
	}
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// mayBeMissing reports whether err is one a consumer sees when it, or its
// stream, no longer exists. A pull to a consumer that is gone is answered
// by no one; a Consume sees the deletion, or the heartbeats stop.
func mayBeMissing(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerDeleted) ||
		errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, jetstream.ErrStreamNotFound) ||
		errors.Is(err, jetstream.ErrNoHeartbeat) ||
		errors.Is(err, nats.ErrNoResponders)
}

// Keep checks the consumer every Interval and whenever Suspect asks, until
// ctx ends. When the consumer is missing it marks it missing, creates it
// again with its config (retrying with backoff while its stream is missing
// or the server does not answer), marks it present, counts the
// re-creation, and calls recreated with the new consumer: a Consume must
// be started again on it. An error of the check other than "not found"
// (the server unreachable) changes nothing: the consumer may well exist.
// A consumer Start could not create is created first, the same
// way (and counted the same).
func (k *Keeper) Keep(ctx context.Context, recreated func(jetstream.Consumer)) {
	if k.missing.Load() {
		if cons, ok := k.recreate(ctx); ok {
			recreated(cons)
		}
	}
	t := time.NewTicker(k.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-k.wake:
		}
		if !k.check(ctx) {
			continue
		}
		if cons, ok := k.recreate(ctx); ok {
			recreated(cons)
		}
	}
}

// check asks the server for the consumer and reports whether it is
// missing.
func (k *Keeper) check(ctx context.Context) bool {
	cctx, cancel := context.WithTimeout(ctx, k.every)
	defer cancel()
	_, err := k.js.Consumer(cctx, k.stream, k.cfg.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return true
	}
	if err != nil && ctx.Err() == nil {
		k.logger.DebugContext(ctx, "streams: consumer check failed", "err", err)
	}
	return false
}

// recreate marks the consumer missing and creates it until that succeeds
// or ctx ends.
func (k *Keeper) recreate(ctx context.Context) (jetstream.Consumer, bool) {
	k.missing.Store(true)
	k.logger.WarnContext(ctx, "streams: consumer missing; creating it again")
	// Let the server finish the deletion first, and keep the processes
	// that share the consumer from creating it at the same instant: a
	// create that races the deletion can lose its store folder (Ensure).
	if periodic.Sleep(ctx, recreateSettle+rand.N(recreateSettle)) != nil {
		return nil, false
	}
	backoff := minRecreateBackoff
	for {
		cons, err := k.Ensure(ctx)
		if err == nil {
			k.missing.Store(false)
			k.metrics.recreated(ctx)
			k.logger.InfoContext(ctx, "streams: consumer created again")
			return cons, true
		}
		if ctx.Err() != nil {
			return nil, false
		}
		k.logger.WarnContext(ctx, "streams: creating the missing consumer failed; retrying", "err", err, "backoff", backoff.String())
		if periodic.Sleep(ctx, backoff) != nil {
			return nil, false
		}
		backoff = min(2*backoff, maxRecreateBackoff)
	}
}

// Close unregisters the keeper's metrics.
func (k *Keeper) Close() error { return k.metrics.close() }

// keeperMetrics are one keeper's instruments; the zero value records
// nothing.
type keeperMetrics struct {
	attrs       metric.MeasurementOption
	recreations metric.Int64Counter
	reg         metric.Registration
}

func newKeeperMetrics(mp metric.MeterProvider, durable string, missing *atomic.Bool) (keeperMetrics, error) {
	if mp == nil {
		return keeperMetrics{}, nil
	}
	m := mp.Meter(keeperMeterName)
	attrs := attribute.NewSet(attribute.String("consumer", durable))
	km := keeperMetrics{attrs: metric.WithAttributeSet(attrs)}
	var err error
	if km.recreations, err = m.Int64Counter("weft.consumer.recreations", metric.WithUnit("{recreation}"),
		metric.WithDescription("Times a durable consumer was found missing and created again.")); err != nil {
		return keeperMetrics{}, fmt.Errorf("streams: metrics: %w", err)
	}
	gauge, err := m.Int64ObservableGauge("weft.consumer.missing", metric.WithUnit("{consumer}"),
		metric.WithDescription("1 while a durable consumer this process uses is missing and not yet created again, else 0."))
	if err != nil {
		return keeperMetrics{}, fmt.Errorf("streams: metrics: %w", err)
	}
	km.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		v := int64(0)
		if missing.Load() {
			v = 1
		}
		o.ObserveInt64(gauge, v, metric.WithAttributeSet(attrs))
		return nil
	}, gauge)
	if err != nil {
		return keeperMetrics{}, fmt.Errorf("streams: metrics: %w", err)
	}
	return km, nil
}

func (m keeperMetrics) recreated(ctx context.Context) {
	if m.recreations != nil {
		m.recreations.Add(ctx, 1, m.attrs)
	}
}

func (m keeperMetrics) close() error {
	if m.reg == nil {
		return nil
	}
	if err := m.reg.Unregister(); err != nil {
		return fmt.Errorf("streams: metrics: %w", err)
	}
	return nil
}
