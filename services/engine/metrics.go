package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// meterName is the instrumentation scope of the engine's metrics.
const meterName = "github.com/weftrun/weft/services/engine"

// Outcome attribute values of weft.engine.round.duration.
const (
	outcomeDecided    = "decided"     // the round appended events or sent tasks
	outcomeNoop       = "noop"        // committed, nothing to do (a redelivery, a stale input)
	outcomeUnknownRun = "unknown_run" // the input's run is not in the log: terminated
	outcomeError      = "error"       // nothing written: the input comes back
)

// roundMetrics is the engine's round instrument, nil without a
// MeterProvider (the events the rounds append are counted by the journal,
// weft.events.appended):
//
//	weft.engine.round.duration   histogram (s)  one round, load to commit, by outcome
//	weft.engine.round.conflicts  counter        compare-and-swap conflicts absorbed
//
// Conflicts stay near zero while each run is driven by the engine holding
// its partition; they rise while engines hand partitions over, and with
// timers and sweeps that meet a run's round.
//
// Rounds of one batch share one transaction, so each is recorded with the
// batch's duration.
type roundMetrics struct {
	duration  metric.Float64Histogram
	conflicts metric.Int64Counter
	outcomes  map[string]metric.RecordOption
}

// roundBuckets are the round duration's bounds in seconds: a round is a
// few milliseconds; conflicts and a slow database take it to seconds.
var roundBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

func newRoundMetrics(mp metric.MeterProvider) (*roundMetrics, error) {
	if mp == nil {
		return nil, nil
	}
	h, err := mp.Meter(meterName).Float64Histogram("weft.engine.round.duration", metric.WithUnit("s"),
		metric.WithDescription("Engine round duration, from loading the run to the commit, by outcome."),
		metric.WithExplicitBucketBoundaries(roundBuckets...))
	if err != nil {
		return nil, fmt.Errorf("engine: metrics: %w", err)
	}
	c, err := mp.Meter(meterName).Int64Counter("weft.engine.round.conflicts", metric.WithUnit("{conflict}"),
		metric.WithDescription("Compare-and-swap conflicts the engine's rounds absorbed: another writer moved the run's head first."))
	if err != nil {
		return nil, fmt.Errorf("engine: metrics: %w", err)
	}
	m := &roundMetrics{duration: h, conflicts: c, outcomes: make(map[string]metric.RecordOption)}
	for _, o := range []string{outcomeDecided, outcomeNoop, outcomeUnknownRun, outcomeError} {
		m.outcomes[o] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", o)))
	}
	return m, nil
}

// timedRunner is the round runner, timing each round when metrics are on.
// Without them it adds nothing to a round but a nil check.
type timedRunner struct {
	*round.Runner
	m    *roundMetrics
	keys *keyMetrics
}

// newTimedRunner returns the round runner of rc, its rounds timed and
// their appends counted on cfg.MeterProvider (when set).
func newTimedRunner(pool *pgxpool.Pool, cfg Config, rc round.Config) (timedRunner, error) {
	m, err := newRoundMetrics(cfg.MeterProvider)
	if err != nil {
		return timedRunner{}, err
	}
	appended, err := journal.NewMetrics(cfg.MeterProvider)
	if err != nil {
		return timedRunner{}, fmt.Errorf("engine: metrics: %w", err)
	}
	if m != nil {
		rc.Conflicted = func(ctx context.Context) { m.conflicts.Add(ctx, 1) }
	}
	log := eventlog.New(pool)
	j := journal.New(log, journal.WithMetrics(appended), journal.WithEventForm(cfg.EventForm))
	keys, err := newKeyMetrics(cfg.MeterProvider, pool)
	if err != nil {
		return timedRunner{}, err
	}
	return timedRunner{Runner: round.New(pool, log, j, rc), m: m, keys: keys}, nil
}

// Run is round.Runner.Run, timed.
func (r timedRunner) Run(ctx context.Context, rd round.Round) (round.Outcome, error) {
	if r.m == nil {
		return r.Runner.Run(ctx, rd)
	}
	start := time.Now()
	out, err := r.Runner.Run(ctx, rd)
	r.m.record(ctx, time.Since(start), outcomeOf(out, err))
	if err == nil {
		r.keys.record(ctx, out.Keys)
	}
	return out, err
}

// RunBatch is round.Runner.RunBatch, each round timed with the batch.
func (r timedRunner) RunBatch(ctx context.Context, rounds []round.Round) ([]round.Result, error) {
	if r.m == nil {
		return r.Runner.RunBatch(ctx, rounds)
	}
	start := time.Now()
	results, err := r.Runner.RunBatch(ctx, rounds)
	d := time.Since(start)
	if err != nil {
		for range rounds {
			r.m.record(ctx, d, outcomeError)
		}
		return results, err
	}
	for _, res := range results {
		r.m.record(ctx, d, outcomeOf(res.Outcome, res.Err))
		if res.Err == nil {
			r.keys.record(ctx, res.Keys)
		}
	}
	return results, nil
}

func (m *roundMetrics) record(ctx context.Context, d time.Duration, outcome string) {
	m.duration.Record(ctx, d.Seconds(), m.outcomes[outcome])
}

func outcomeOf(out round.Outcome, err error) string {
	switch {
	case errors.Is(err, round.ErrUnknownRun):
		return outcomeUnknownRun
	case err != nil:
		return outcomeError
	case out.Decision.Empty():
		return outcomeNoop
	}
	return outcomeDecided
}
