package admission

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Live holds limits that may change while services use them (Limits.Live).
// Safe for concurrent use.
type Live struct{ cur atomic.Pointer[Limits] }

// NewLive returns a Live holding l.
func NewLive(l Limits) *Live {
	v := &Live{}
	v.Store(l)
	return v
}

// Load returns the limits held now.
func (v *Live) Load() Limits {
	if l := v.cur.Load(); l != nil {
		return *l
	}
	return Limits{}
}

// Store replaces the limits held; l's own Live is dropped.
func (v *Live) Store(l Limits) {
	l.Live = nil
	v.cur.Store(&l)
}

// DefaultWatchInterval is how often a Watcher reads its file unless
// Watch is told otherwise.
const DefaultWatchInterval = 5 * time.Second

// Watcher keeps the limits of an admission file: it reloads the file when
// its content changes (read every interval) and on Reload. A file that no
// longer parses, or cannot be read, leaves the last good limits in force;
// the failure is logged and, once Run has started, counted
// (weft.admission.reloads{outcome="failed"}).
type Watcher struct {
	path     string
	interval time.Duration
	logger   *slog.Logger
	live     *Live

	mu      sync.Mutex          // serializes reloads
	reloads metric.Int64Counter // a no-op one until Run
	last    []byte              // the content last read, good or bad
	readErr string              // the last failure to read the file, if the last read failed
}

// Watch loads the admission file at path and returns its Watcher, which
// reads the file every interval once it runs (zero means
// DefaultWatchInterval, negative never: Reload only). A file that cannot
// be read or parsed is an error (ParseFile's *FileError). A nil logger
// discards logs.
func Watch(path string, interval time.Duration, logger *slog.Logger) (*Watcher, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("admission file: %w", err)
	}
	l, err := ParseFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	reloads, err := reloadCounter(noop.NewMeterProvider())
	if err != nil {
		return nil, err
	}
	return &Watcher{
		path: path, interval: cmp.Or(interval, DefaultWatchInterval),
		logger: cmp.Or(logger, slog.New(slog.DiscardHandler)), reloads: reloads,
		live: NewLive(l), last: data,
	}, nil
}

// reloadCounter returns the counter weft.admission.reloads of mp.
func reloadCounter(mp metric.MeterProvider) (metric.Int64Counter, error) {
	c, err := mp.Meter("github.com/weftrun/weft/internal/policy/admission").Int64Counter("weft.admission.reloads",
		metric.WithUnit("{reload}"), metric.WithDescription("reloads of the admission file, by outcome: applied, or failed (the last good limits stay)"))
	if err != nil {
		return nil, fmt.Errorf("admission: metrics: %w", err)
	}
	return c, nil
}

// Limits returns limits that follow the file (Limits.Live): give them to
// the services once.
func (w *Watcher) Limits() Limits { return Limits{Live: w.live} }

// Reload reads the file now and applies its limits, or returns why it
// cannot, keeping the last good limits. Safe for concurrent use.
func (w *Watcher) Reload(ctx context.Context) error { return w.reload(ctx, true) }

// Run counts reloads on mp (nil: nowhere), logs that it watches, then
// reads the file every interval, applying its limits when its content changed, and reloads it
// at each value from hangups (SIGHUP), until ctx ends; it returns ctx's
// error.
func (w *Watcher) Run(ctx context.Context, mp metric.MeterProvider, hangups <-chan os.Signal) error {
	if mp != nil {
		reloads, err := reloadCounter(mp)
		if err != nil {
			return err
		}
		w.mu.Lock()
		w.reloads = reloads
		w.mu.Unlock()
	}
	w.logger.InfoContext(ctx, "watching the admission file", "path", w.path, "interval", w.interval)
	var tick <-chan time.Time
	if w.interval > 0 {
		t := time.NewTicker(w.interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-hangups:
			_ = w.reload(ctx, true) // logged and counted
		case <-tick:
			_ = w.reload(ctx, false)
		}
	}
}

// reload re-reads the file; unless forced, content it already read (good
// or bad) is not parsed, logged or counted again.
func (w *Watcher) reload(ctx context.Context, force bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	data, err := os.ReadFile(w.path)
	if !force && (err == nil && bytes.Equal(data, w.last) || err != nil && err.Error() == w.readErr) {
		return nil
	}
	w.readErr = ""
	var l Limits
	if err != nil {
		w.readErr = err.Error()
	} else {
		w.last = data
		l, err = ParseFile(data)
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", w.path, err)
		// Logged before it is counted: whoever sees the count sees the log.
		w.logger.ErrorContext(ctx, "admission file not reloaded: the last good limits stay in force", "path", w.path, "err", err)
		w.reloads.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", "failed")))
		return err
	}
	w.logger.InfoContext(ctx, "admission file reloaded", "path", w.path, "environments", len(l.PerEnvironment),
		"default_max_concurrent_runs", l.Default.MaxConcurrentRuns)
	w.live.Store(l)
	w.reloads.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", "applied")))
	return nil
}
