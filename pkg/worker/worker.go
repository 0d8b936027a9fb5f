package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/startstop"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/tracing"
)

// Worker runs the activities registered with it for the tasks of one
// queue. Build it with New, Register activities, then Start it; Stop ends
// it. Its methods are safe for concurrent use.
type Worker struct {
	js        jetstream.JetStream
	cfg       Config
	logger    *slog.Logger
	providers map[string]SecretsProvider
	running   runningSet
	tracer    trace.Tracer   // cfg.TracerProvider's, or a no-op one
	keyed     *keyedMemory   // the keyed attempts begun (keyed.go)
	epoch     *deliveryEpoch // when delivery counts became trustworthy (keyed.go)
	metrics   workerMetrics

	regMu      sync.RWMutex
	activities map[string]*activity

	// life's soft stop ends taking tasks and lets running ones finish; its
	// hard stop cancels running activities and abandons their tasks.
	life startstop.Base
	// lost is set when the worker stopped by itself: its connection closed
	// for good (Err).
	lost atomic.Bool
}

// New returns a worker that takes tasks from js, which must sit on a live
// connection to a server where the streams exist (streams.Ensure). cfg is
// validated (see Config.Validate); MaxOutputBytes must also leave room for
// the rest of a result within the server's max payload.
func New(js jetstream.JetStream, cfg Config, opts ...Option) (*Worker, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: New needs a JetStream context", ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if nc := js.Conn(); nc != nil {
		if limit := nc.MaxPayload(); limit > 0 && int64(cfg.MaxOutputBytes)+resultHeadroom > limit {
			return nil, fmt.Errorf("%w: MaxOutputBytes %d leaves no room for a result within the server's max payload of %d bytes",
				ErrInvalidConfig, cfg.MaxOutputBytes, limit)
		}
	}
	o := options{providers: make(map[string]SecretsProvider)}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	m, err := newWorkerMetrics(cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	return &Worker{
		js:         js,
		metrics:    m,
		cfg:        cfg,
		logger:     cfg.Logger.With("component", "worker", "queue", cfg.Queue, "worker_id", cfg.WorkerID),
		providers:  o.providers,
		running:    runningSet{byRun: make(map[string]map[*runningAttempt]struct{})},
		activities: make(map[string]*activity),
		tracer:     tracing.Tracer(cfg.TracerProvider, tracerName),
		keyed:      newKeyedMemory(maxRememberedAttempts),
		epoch:      newDeliveryEpoch(js.Conn(), time.Now()),
	}, nil
}

// Register makes fn the activity called name. It may be called before or
// after Start; a task for a name not registered when it arrives fails with
// CodeUnknownActivity. It fails (wrapping ErrInvalidConfig) on an empty
// name, a nil fn, a bad option, or a name registered before.
func (w *Worker) Register(name string, fn ActivityFunc, opts ...ActivityOption) error {
	if name == "" || fn == nil {
		return fmt.Errorf("%w: Register needs a name and a function", ErrInvalidConfig)
	}
	a := &activity{fn: fn}
	for _, opt := range opts {
		if err := opt(a); err != nil {
			return fmt.Errorf("activity %q: %w", name, err)
		}
	}
	w.regMu.Lock()
	defer w.regMu.Unlock()
	if _, dup := w.activities[name]; dup {
		return fmt.Errorf("%w: activity %q registered twice", ErrInvalidConfig, name)
	}
	w.activities[name] = a
	return nil
}

// registered lists the names of the activities registered, quoted and
// sorted, at most 20 of them: what an UNKNOWN_ACTIVITY failure names.
func (w *Worker) registered() string {
	w.regMu.RLock()
	names := slices.Sorted(maps.Keys(w.activities))
	w.regMu.RUnlock()
	if len(names) == 0 {
		return "none"
	}
	more := ""
	if len(names) > 20 {
		names, more = names[:20], fmt.Sprintf(" and %d more", len(names)-20)
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return strings.Join(quoted, ", ") + more
}

func (w *Worker) activity(name string) (*activity, bool) {
	w.regMu.RLock()
	defer w.regMu.RUnlock()
	a, ok := w.activities[name]
	return a, ok
}

// Start creates the queue's task consumer or updates it to the settings of
// streams.TaskConsumer with Config.AckWait, and keeps it while the worker
// runs (streams.Keeper: deleted, alone or with its stream, it is created
// again; a creation at start that fails in a way that may be transient is
// left to the keeper, and the worker takes tasks once the consumer
// exists), subscribes to cancel notices,
// and then takes and runs tasks in the background until Stop is called or
// ctx ends. Cancelling ctx is a hard stop: running activities are
// cancelled and their tasks left for redelivery. Start returns
// startstop.ErrAlreadyStarted once it has succeeded; after a failure it
// may be called again.
func (w *Worker) Start(ctx context.Context) error {
	return w.life.Start(ctx, w.start)
}

// start sets the worker up for Start and returns its run loop.
func (w *Worker) start(hard, soft context.Context) (func(), error) {
	cc, err := streams.TaskConsumer(w.cfg.Queue, w.cfg.AckWait)
	if err != nil {
		return nil, err
	}
	keeper, err := streams.NewKeeper(w.js, streams.TasksStream, cc,
		streams.KeeperConfig{Logger: w.logger, MeterProvider: w.cfg.MeterProvider})
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	cons, err := keeper.Start(hard) // nil while a transient failure leaves it to the keeper
	if err != nil {
		_ = keeper.Close()
		return nil, fmt.Errorf("worker: create consumer: %w", err)
	}
	sub, err := w.subscribeCancels(hard)
	if err != nil {
		_ = keeper.Close()
		return nil, err
	}
	beat := cc.AckWait / 3 // the consumer's, as created or updated with cc
	w.logger.InfoContext(hard, "worker started", "concurrency", w.cfg.Concurrency, "ack_wait", cc.AckWait.String())
	return func() { w.run(hard, soft, keeper, cons, sub, beat) }, nil
}

// Stop stops taking tasks and waits for the running ones to finish and
// report. When ctx ends first, it cancels the running activities, leaves
// their tasks to be redelivered (a Nak, so another worker may take them at
// once), waits for the activities to return, and returns an error wrapping
// startstop.ErrDrainCutShort and ctx.Err(). An activity that ignores its
// context delays Stop. Stop is idempotent, and a no-op on a worker that
// was never started.
func (w *Worker) Stop(ctx context.Context) error {
	if err := w.life.Stop(ctx); err != nil {
		return fmt.Errorf("worker: stop: %w", err)
	}
	return nil
}

// Err reports why a worker stopped by itself, once Stopped is closed:
// ErrConnectionClosed when its NATS connection closed for good. It is nil
// while the worker runs and after a stop that Stop or Start's ctx asked
// for. A process that serves with a worker waits on Stopped as well as on
// its own end, and exits with Err.
func (w *Worker) Err() error {
	if w.lost.Load() {
		return ErrConnectionClosed
	}
	return nil
}

// Started returns a channel closed once Start has succeeded.
func (w *Worker) Started() <-chan struct{} { return w.life.Started() }

// Stopped returns a channel closed once a started worker has stopped, by
// Stop or by the end of Start's ctx.
func (w *Worker) Stopped() <-chan struct{} { return w.life.Stopped() }

// run takes tasks until soft ends, waits for the running ones, and then
// drops the cancel subscription. ctx ends every activity and I/O at once.
func (w *Worker) run(ctx, soft context.Context, keeper *streams.Keeper, cons jetstream.Consumer, sub *nats.Subscription, beat time.Duration) {
	defer func() { _ = keeper.Close() }()
	var tasks sync.WaitGroup
	w.pull(ctx, soft, keeper, cons, &tasks, beat)
	tasks.Wait()
	if err := sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		w.logger.WarnContext(ctx, "worker: unsubscribe from cancel notices", "err", err)
	}
	w.logger.InfoContext(ctx, "worker stopped")
}
