package outbox

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/streams"
)

// Defaults applied to a zero RelayConfig field.
const (
	DefaultBatchSize         = 256
	DefaultMaxInFlight       = 256
	DefaultMaxAttempts       = 10
	DefaultInitialBackoff    = 100 * time.Millisecond
	DefaultMaxBackoff        = 10 * time.Second
	DefaultJitter            = 0.2
	DefaultAckTimeout        = 5 * time.Second
	DefaultPollInterval      = 2 * time.Second
	DefaultLockRetryInterval = 2 * time.Second
	DefaultIdleGrace         = 5 * time.Millisecond
)

// MaxIdleGrace is the longest IdleGrace a RelayConfig may set: the grace
// delays each row that arrives during it by up to that much.
const MaxIdleGrace = 100 * time.Millisecond

// ErrInvalidConfig is wrapped by every error NewRelay returns for a bad
// RelayConfig.
var ErrInvalidConfig = errors.New("outbox: invalid relay config")

// RelayConfig tunes a Relay. The zero value of each field means its
// default; NewRelay validates the result.
type RelayConfig struct {
	// BatchSize is the most rows one claim reads of each partition. A
	// claim that took BatchSize rows of some partition is followed by the
	// next claim at once. Default 256.
	BatchSize int
	// MaxInFlight bounds the unacknowledged publishes of one relay worker
	// (a worker serves the partitions its relay won together). Default 256.
	// Keep Partitions*MaxInFlight under the JetStream context's
	// PublishAsyncMaxPending (4000 by default): a relay that won its
	// partitions one at a time has a worker for each.
	MaxInFlight int
	// MaxAttempts is how many failures a row may be charged before it is
	// moved to outbox_dead. Default 10.
	MaxAttempts int
	// InitialBackoff is the wait after a row's first failure; it doubles
	// with each further failure up to MaxBackoff. Defaults 100ms and 10s.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// Jitter is the fraction of each backoff added at random, in (0, 1].
	// Zero means the default 0.2; a negative value turns jitter off.
	Jitter float64
	// AckTimeout bounds the wait for one publish's ack; a publish not acked
	// by then counts as a transport failure. Default 5s. Creating the
	// JetStream context with jetstream.WithPublishAsyncTimeout of at most
	// this value lets the client forget such publishes too.
	AckTimeout time.Duration
	// PollInterval is the fallback wake-up of an idle relay worker, a
	// backstop for notifications lost while the relay's session was down.
	// Work normally arrives by NOTIFY. Default 2s.
	PollInterval time.Duration
	// IdleGrace is how long a relay worker waits, after a claim that
	// took fewer than BatchSize rows of each partition, before it claims
	// again, so rows written meanwhile share one claim and one settlement
	// instead of one each; and how long it waits once more after an empty
	// claim before it arms its partitions (see docs/outbox.md, "Waking the
	// relay"). A row
	// written during the grace waits for it, up to IdleGrace. Default 5ms;
	// a negative value turns the grace off (claim again at once); at most
	// MaxIdleGrace.
	IdleGrace time.Duration
	// LockRetryInterval is how often a relay retries the partition locks it
	// does not hold (so a standby takes over a dead relay's partitions) and
	// checks that its session is alive. Default 2s.
	LockRetryInterval time.Duration
	// DuplicateWindow is the Duplicates window of the streams the relay
	// publishes to. NewRelay refuses a config whose RetrySpan exceeds it.
	// Default streams.DefaultDuplicates.
	DuplicateWindow time.Duration
	// ObservePublish, if set, is called once per row deleted after its ack
	// (a new message or a duplicate), with the row's insert time and the
	// time its ack arrived: the enqueue→ack delay, for the bench and
	// metrics. It runs on relay goroutines, concurrently; it must be fast.
	ObservePublish func(enqueuedAt, ackedAt time.Time)
	// Logger receives the relay's logs. Nil discards them.
	Logger *slog.Logger
	// MeterProvider receives the relay's metrics: publish latency
	// (weft.outbox.publish.latency), outbox depth and oldest age
	// (weft.outbox.depth, weft.outbox.oldest_age, read at scrape time) and
	// rows relayed (weft.outbox.relayed). Nil records nothing.
	MeterProvider metric.MeterProvider
	// TracerProvider, if set, traces each publish of a row that carries a
	// traceparent: a producer span parented to the stored context, whose own
	// context replaces it in the published message. Nil publishes the
	// stored headers as they are, so the trace still passes through.
	TracerProvider trace.TracerProvider
	// TestingKnobs are hooks for tests. Leave them zero in production.
	TestingKnobs TestingKnobs
}

// TestingKnobs inject faults for crash tests.
type TestingKnobs struct {
	// BeforePublish runs after a batch is claimed and before any of it is
	// published: a crash there leaves committed rows the bus never saw.
	BeforePublish func()
	// AfterPublish runs after every publish of a batch is resolved and
	// before the batch's rows are deleted: a crash there leaves rows that
	// are already in the stream.
	AfterPublish func()
}

// WithDefaults returns c with every zero field set to its default.
func (c RelayConfig) WithDefaults() RelayConfig {
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	c.MaxInFlight = cmp.Or(c.MaxInFlight, DefaultMaxInFlight)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, DefaultMaxAttempts)
	c.InitialBackoff = cmp.Or(c.InitialBackoff, DefaultInitialBackoff)
	c.MaxBackoff = cmp.Or(c.MaxBackoff, DefaultMaxBackoff)
	c.Jitter = cmp.Or(c.Jitter, DefaultJitter) // a negative value (off) is kept
	c.AckTimeout = cmp.Or(c.AckTimeout, DefaultAckTimeout)
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	c.IdleGrace = cmp.Or(c.IdleGrace, DefaultIdleGrace) // a negative value (off) is kept
	c.LockRetryInterval = cmp.Or(c.LockRetryInterval, DefaultLockRetryInterval)
	c.DuplicateWindow = cmp.Or(c.DuplicateWindow, streams.DefaultDuplicates)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports whether c, after defaults, is usable, including that
// its RetrySpan fits in DuplicateWindow.
func (c RelayConfig) Validate() error {
	c = c.WithDefaults()
	counts := []struct {
		name string
		v    int
	}{{"BatchSize", c.BatchSize}, {"MaxInFlight", c.MaxInFlight}, {"MaxAttempts", c.MaxAttempts}}
	for _, f := range counts {
		if f.v < 1 {
			return fmt.Errorf("%w: %s %d is below 1", ErrInvalidConfig, f.name, f.v)
		}
	}
	durations := []struct {
		name string
		d    time.Duration
	}{
		{"InitialBackoff", c.InitialBackoff}, {"MaxBackoff", c.MaxBackoff}, {"AckTimeout", c.AckTimeout},
		{"PollInterval", c.PollInterval}, {"LockRetryInterval", c.LockRetryInterval}, {"DuplicateWindow", c.DuplicateWindow},
	}
	for _, f := range durations {
		if f.d <= 0 {
			return fmt.Errorf("%w: %s %v is not positive", ErrInvalidConfig, f.name, f.d)
		}
	}
	if c.MaxBackoff < c.InitialBackoff {
		return fmt.Errorf("%w: MaxBackoff %v is below InitialBackoff %v", ErrInvalidConfig, c.MaxBackoff, c.InitialBackoff)
	}
	if c.IdleGrace > MaxIdleGrace {
		return fmt.Errorf("%w: IdleGrace %v is above MaxIdleGrace %v", ErrInvalidConfig, c.IdleGrace, MaxIdleGrace)
	}
	if c.Jitter > 1 {
		return fmt.Errorf("%w: Jitter %v is above 1", ErrInvalidConfig, c.Jitter)
	}
	if span := c.RetrySpan(); span > c.DuplicateWindow {
		return fmt.Errorf("%w: RetrySpan %v exceeds DuplicateWindow %v: a republish could land outside "+
			"JetStream's dedupe window; lower MaxAttempts, MaxBackoff or AckTimeout, or widen the stream's Duplicates",
			ErrInvalidConfig, span, c.DuplicateWindow)
	}
	return nil
}

// RetrySpan is the longest time, with the relay and the bus up, between the
// first publish of a row and its last republish. A publish whose ack was
// lost may already be in the stream; its republish is recognised as a
// duplicate only within the stream's Duplicates window, so the window must
// be at least this span:
//
//	RetrySpan = LockRetryInterval                     (a standby takes over)
//	          + MaxAttempts × AckTimeout              (each attempt waits for its ack)
//	          + Σ_{n=1}^{MaxAttempts-1} min(InitialBackoff·2^(n-1), MaxBackoff)·(1+Jitter)
//
// With the defaults: 2s + 10×5s + (0.1+0.2+0.4+0.8+1.6+3.2+6.4+10+10)s×1.2
// = 2s + 50s + 39.24s ≈ 91s, against streams.DefaultDuplicates of 5 minutes.
//
// A transport failure (bus unreachable, ack lost) is not charged to the
// row; the worker pauses at most MaxBackoff·(1+Jitter) and retries, which
// the span covers. What no window covers is an outage longer than the
// window: a message stored just before it and republished after it is
// stored twice. Consumers dedupe on (runId, runSeq) for that reason.
func (c RelayConfig) RetrySpan() time.Duration {
	c = c.WithDefaults()
	span := c.LockRetryInterval + time.Duration(c.MaxAttempts)*c.AckTimeout
	for n := 1; n < c.MaxAttempts; n++ {
		span += c.maxDelay(n)
	}
	return span
}

// backoff is the wait after a row's n-th failure (n ≥ 1), jitter included.
func (c RelayConfig) backoff(n int) time.Duration {
	d := c.baseDelay(n)
	if j := c.jitter(); j > 0 && d > 0 {
		d += time.Duration(rand.Int64N(int64(float64(d)*j) + 1))
	}
	return d
}

// maxDelay is the largest value backoff(n) can return.
func (c RelayConfig) maxDelay(n int) time.Duration {
	d := c.baseDelay(n)
	return d + time.Duration(float64(d)*c.jitter())
}

// jitter is the jitter fraction in use: Jitter, or 0 when turned off.
func (c RelayConfig) jitter() float64 { return max(c.Jitter, 0) }

func (c RelayConfig) baseDelay(n int) time.Duration {
	d := c.InitialBackoff
	for i := 1; i < n && d < c.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, c.MaxBackoff)
}
