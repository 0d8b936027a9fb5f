package worker

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
)

// Defaults applied to a zero Config field.
const (
	// DefaultQueue is the task queue a worker serves when Config.Queue is
	// empty; it is the queue a plan step gets when it names none.
	DefaultQueue = "default"
	// DefaultConcurrency is how many tasks one worker runs at once.
	DefaultConcurrency = 4
	// DefaultMaxOutputBytes bounds a completed result's output plus its
	// JSON-encoded artifact list: 64 KiB, as much as a step's input may be.
	// Anything larger belongs in an artifact.
	DefaultMaxOutputBytes = 64 << 10
	// DefaultPublishTimeout is the latency budget of one result publish:
	// the wait for its PubAck (execution-semantics §5, writeLatencyBudgetMs).
	DefaultPublishTimeout = 3 * time.Second
	// DefaultRedeliveryDelay is how long a task whose final result could
	// not be published waits before JetStream hands it out again.
	DefaultRedeliveryDelay = 2 * time.Second
	// DefaultStartedAfter is how long an attempt runs before the worker
	// reports StepStarted: long enough that most short activities report
	// only their outcome, short enough that a person watching a run sees a
	// longer one start.
	DefaultStartedAfter = 100 * time.Millisecond
	// DefaultLanePollInterval is how often an idle worker asks the stream
	// which tenant lanes of its queue hold tasks. A task the worker sees
	// published is taken at once; the poll finds those it did not see
	// (published before it started, or while it was disconnected) and
	// those made available again without a publish (given back, or their
	// AckWait passed).
	DefaultLanePollInterval = time.Second
)

// resultHeadroom is the room a result message needs beside its output: ids,
// keys, a truncated error message. MaxOutputBytes plus this must fit in the
// server's max payload.
const resultHeadroom = 8 << 10

// Config tunes a Worker. The zero value of each field means its default;
// New validates the result.
type Config struct {
	// Queue is the task queue to serve, a NATS subject token. Default
	// DefaultQueue.
	Queue string
	// Concurrency is how many tasks the worker runs at once. The worker
	// takes a task from JetStream only when it has a free slot, so a task
	// never waits in this process while another worker is idle. Default
	// DefaultConcurrency.
	Concurrency int
	// WorkerID names this worker in its results. Default "<host>/<pid>".
	WorkerID string
	// AckWait is the task consumer's AckWait: a task whose worker shows no
	// sign of life for this long is handed to another worker. The worker
	// heartbeats every third of it. Default streams.DefaultTaskAckWait;
	// at least a second. Every worker of a queue shares one consumer, so
	// the AckWait of the worker that started last applies to all.
	AckWait time.Duration
	// MaxOutputBytes bounds a completed result's output plus its
	// JSON-encoded artifacts. A larger output fails the attempt with
	// CodeOutputTooLarge and is never published. Default
	// DefaultMaxOutputBytes.
	MaxOutputBytes int
	// PublishTimeout bounds the wait for one result's PubAck, and for the
	// engine's reply to a reconciliation lookup. Default
	// DefaultPublishTimeout.
	PublishTimeout time.Duration
	// RedeliveryDelay is the delay of the Nak sent when a final result
	// cannot be published. Default DefaultRedeliveryDelay.
	RedeliveryDelay time.Duration
	// StartedAfter is how long an attempt runs before the worker publishes
	// its StepStarted result. An attempt that ends sooner publishes only
	// its final result, and the engine records StepStarted with the
	// outcome, as a Temporal server records a retried activity's start
	// with its completion: one message and one engine round fewer per
	// short step. Negative publishes StepStarted at once, before the
	// activity runs, as a keyed attempt always does. Default
	// DefaultStartedAfter.
	StartedAfter time.Duration
	// LanePollInterval is how often the worker, while it has a free slot
	// and no task, asks the stream which tenant lanes of its queue hold
	// tasks. Default DefaultLanePollInterval.
	LanePollInterval time.Duration
	// LaneInactiveThreshold is how long a tenant lane's consumer lives with
	// no worker pulling from it before the server deletes it
	// (streams.TaskLaneConsumer); at least a second. Default
	// streams.DefaultLaneInactiveThreshold. Like AckWait, the worker that
	// created or updated a lane last sets it.
	LaneInactiveThreshold time.Duration
	// MaxHeartbeatDetailsBytes bounds the details of one heartbeat
	// (Input.Heartbeat), inclusive: larger ones are refused with
	// ErrHeartbeatTooLarge. At most task.DefaultMaxHeartbeatDetailsBytes,
	// which the engine's heartbeat bucket enforces too. Default
	// task.DefaultMaxHeartbeatDetailsBytes.
	MaxHeartbeatDetailsBytes int
	// Logger receives the worker's logs. Nil discards them.
	Logger *slog.Logger
	// MeterProvider receives the metrics of the queue's consumer
	// (weft.consumer.missing, weft.consumer.recreations; streams.Keeper)
	// and the worker's own (weft.worker.attempts.held; metrics.go).
	// Nil records nothing.
	MeterProvider metric.MeterProvider
	// TracerProvider traces each task: a span around the activity's
	// execution, parented to the trace context in the task message's
	// headers, whose context the results carry in theirs. Nil traces
	// nothing but still passes the task's context on to its results.
	TracerProvider trace.TracerProvider
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	c.Queue = cmp.Or(c.Queue, DefaultQueue)
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	c.WorkerID = cmp.Or(c.WorkerID, defaultWorkerID())
	c.AckWait = cmp.Or(c.AckWait, streams.DefaultTaskAckWait)
	c.MaxOutputBytes = cmp.Or(c.MaxOutputBytes, DefaultMaxOutputBytes)
	c.PublishTimeout = cmp.Or(c.PublishTimeout, DefaultPublishTimeout)
	c.RedeliveryDelay = cmp.Or(c.RedeliveryDelay, DefaultRedeliveryDelay)
	c.StartedAfter = cmp.Or(c.StartedAfter, DefaultStartedAfter)
	c.LanePollInterval = cmp.Or(c.LanePollInterval, DefaultLanePollInterval)
	c.LaneInactiveThreshold = cmp.Or(c.LaneInactiveThreshold, streams.DefaultLaneInactiveThreshold)
	c.MaxHeartbeatDetailsBytes = cmp.Or(c.MaxHeartbeatDetailsBytes, task.DefaultMaxHeartbeatDetailsBytes)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports whether c, after defaults, is usable: a valid queue
// token without streams.LaneSeparator, positive counts and durations, an
// AckWait and a LaneInactiveThreshold of at least a second.
func (c Config) Validate() error {
	c = c.WithDefaults()
	if _, err := streams.TaskConsumer(c.Queue, c.AckWait); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if _, err := streams.TaskLaneConsumer(c.Queue, "lane", c.AckWait, c.LaneInactiveThreshold); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	switch {
	case c.Concurrency < 1:
		return fmt.Errorf("%w: Concurrency %d is below 1", ErrInvalidConfig, c.Concurrency)
	case c.MaxOutputBytes < 1:
		return fmt.Errorf("%w: MaxOutputBytes %d is below 1", ErrInvalidConfig, c.MaxOutputBytes)
	case c.PublishTimeout <= 0:
		return fmt.Errorf("%w: PublishTimeout %v is not positive", ErrInvalidConfig, c.PublishTimeout)
	case c.RedeliveryDelay <= 0:
		return fmt.Errorf("%w: RedeliveryDelay %v is not positive", ErrInvalidConfig, c.RedeliveryDelay)
	case c.LanePollInterval <= 0:
		return fmt.Errorf("%w: LanePollInterval %v is not positive", ErrInvalidConfig, c.LanePollInterval)
	case c.MaxHeartbeatDetailsBytes < 1 || c.MaxHeartbeatDetailsBytes > task.DefaultMaxHeartbeatDetailsBytes:
		return fmt.Errorf("%w: MaxHeartbeatDetailsBytes %d is not in 1..%d", ErrInvalidConfig,
			c.MaxHeartbeatDetailsBytes, task.DefaultMaxHeartbeatDetailsBytes)
	}
	return nil
}

func defaultWorkerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return host + "/" + strconv.Itoa(os.Getpid())
}

// Option configures a Worker beyond its Config.
type Option func(*options) error

type options struct {
	providers map[string]SecretsProvider
}

// WithSecretsProvider registers p under name: a step's SecretRef whose
// Provider is name resolves through p. The empty name registers the
// provider of refs that name none. A worker has no provider unless one is
// registered, so a plan cannot reach the worker's environment or files
// unless its operator allows it.
func WithSecretsProvider(name string, p SecretsProvider) Option {
	return func(o *options) error {
		if p == nil {
			return fmt.Errorf("%w: secrets provider %q is nil", ErrInvalidConfig, name)
		}
		if _, dup := o.providers[name]; dup {
			return fmt.Errorf("%w: secrets provider %q registered twice", ErrInvalidConfig, name)
		}
		o.providers[name] = p
		return nil
	}
}
