// Package activityworker is the runnable activity worker: a pkg/worker
// Worker serving one task queue with the built-in demo activities (echo,
// sleep, fail-n-times, http-get; see internal/demo) that the dev stack and
// the tests use.
package activityworker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"
	"unicode"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/pkg/worker"
	"github.com/weftrun/weft/services/activity-worker/internal/demo"
)

// DefaultDrainTimeout bounds how long Run lets running activities finish
// after its context ends; their tasks are then given back for redelivery.
const DefaultDrainTimeout = 30 * time.Second

// Config tunes the service. The zero value of each field means its
// default.
type Config struct {
	// Queue is the task queue to serve. Default worker.DefaultQueue.
	Queue string
	// Concurrency is how many tasks run at once. Default
	// worker.DefaultConcurrency.
	Concurrency int
	// WorkerID names the worker in its results. Default "<host>/<pid>".
	WorkerID string
	// AckWait is the task consumer's AckWait. Default
	// streams.DefaultTaskAckWait.
	AckWait time.Duration
	// DrainTimeout is how long shutdown waits for running activities.
	// Default DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Logger receives the service's and its worker's logs. Nil discards
	// them.
	Logger *slog.Logger
	// MeterProvider receives the queue's depth, read from its JetStream
	// consumer at each scrape while Run serves (weft.worker.tasks.pending
	// and weft.worker.tasks.in_flight). Nil records nothing.
	MeterProvider metric.MeterProvider
	// TracerProvider traces each activity (worker.Config.TracerProvider).
	// Nil traces nothing.
	TracerProvider trace.TracerProvider
	// HTTPGetAllow lists the address prefixes http-get may reach although
	// they are internal (loopback, private, link-local, metadata...). By
	// default http-get reaches public addresses only; the check is made on
	// each resolved address at dial time.
	HTTPGetAllow []netip.Prefix
	// HTTPGetAllowPrivate lets http-get reach every internal address but
	// the cloud-metadata ones (which only HTTPGetAllow can admit).
	HTTPGetAllowPrivate bool
	// LanePollInterval and LaneInactiveThreshold tune the tenant lanes
	// (worker.Config). Zero means their defaults.
	LanePollInterval, LaneInactiveThreshold time.Duration
}

// Service is the activity-worker service.
type Service struct {
	worker *worker.Worker
	js     jetstream.JetStream
	queue  string
	mp     metric.MeterProvider
	drain  time.Duration
	logger *slog.Logger
}

// New returns the service, its demo activities registered, taking tasks
// over nc once Run is called. The streams must exist (streams.Ensure) by
// then. A nil Logger, MeterProvider or TracerProvider in cfg discards what
// it would receive.
func New(nc *nats.Conn, cfg Config) (*Service, error) {
	if nc == nil {
		return nil, errors.New("activity-worker: New needs a NATS connection")
	}
	logger := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)).With("service", "activity-worker")
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("activity-worker: jetstream: %w", err)
	}
	w, err := worker.New(js, worker.Config{
		Queue: cfg.Queue, Concurrency: cfg.Concurrency, WorkerID: cfg.WorkerID, AckWait: cfg.AckWait, Logger: logger,
		TracerProvider: cfg.TracerProvider, MeterProvider: cfg.MeterProvider,
		LanePollInterval: cfg.LanePollInterval, LaneInactiveThreshold: cfg.LaneInactiveThreshold,
	})
	if err != nil {
		return nil, fmt.Errorf("activity-worker: %w", err)
	}
	if err := demo.Register(w, demo.NewHTTPClient(demo.AddressPolicy{Allow: cfg.HTTPGetAllow, AllowPrivate: cfg.HTTPGetAllowPrivate})); err != nil {
		return nil, fmt.Errorf("activity-worker: %w", err)
	}
	return &Service{worker: w, js: js, queue: cmp.Or(cfg.Queue, worker.DefaultQueue), mp: cfg.MeterProvider,
		drain: cmp.Or(cfg.DrainTimeout, DefaultDrainTimeout), logger: logger}, nil
}

// Run starts the worker and serves tasks until ctx ends. Then it stops
// taking tasks, lets the running ones finish for up to DrainTimeout, and
// returns nil, or an error when the worker could not start or the drain
// was cut short. A worker whose NATS connection closed for good stops by
// itself, and Run returns its worker.ErrConnectionClosed. Run serves once: a second call fails with
// startstop.ErrAlreadyStarted.
func (s *Service) Run(ctx context.Context) error {
	gauges, err := registerQueueGauges(s.mp, s.js, s.queue)
	if err != nil {
		return err
	}
	if gauges != nil {
		defer func() { _ = gauges.Unregister() }()
	}
	// The worker outlives ctx by the drain: ending ctx asks for a graceful
	// stop below, not the hard stop that ending Start's context means.
	if err := s.worker.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("activity-worker: %w", err)
	}
	s.logger.InfoContext(ctx, "activity worker serving")
	select {
	case <-ctx.Done():
	case <-s.worker.Stopped(): // by itself: its connection closed for good
		return fmt.Errorf("activity-worker: %w", s.worker.Err())
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.drain)
	defer cancel()
	if err := s.worker.Stop(stopCtx); err != nil {
		return fmt.Errorf("activity-worker: %w", err)
	}
	return nil
}

// ParsePrefixes parses a list of CIDR prefixes separated by commas or
// white space, as HTTPGetAllow takes them ("10.1.0.0/16, fd12::/64"); a
// bare address is its own prefix (/32 or /128). An empty list is nil.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, fmt.Errorf("activity-worker: %q is not a CIDR prefix or an address", f)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
