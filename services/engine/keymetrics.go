package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/services/engine/internal/round"
)

// keyMetrics are the instruments of the plans' concurrency limits
// (docs/flow-control.md, "Seen by people"), nil without a MeterProvider:
//
//	weft.admission.key.admitted  counter        starts that took a limit's place, by plan and limit
//	weft.admission.key.queued    counter        runs that began waiting in a limit's queue
//	weft.admission.key.cancelled counter        runs CANCEL_NEWEST or CANCEL_OLDEST cancelled
//	weft.admission.key.wait      histogram (s)  how long an admitted run waited in the queue
//	weft.admission.key.depth     gauge          runs waiting, by key value: the top DepthKeys, then key="other"
//
// The counters and the histogram carry the plan's id and the limit
// ("0: input.customerId"): as many series as plans declare limits, not as
// many as key values. The depth gauge is by key value ("orders 0 42": the
// plan, the limit's place, the value), bounded to the DepthKeys deepest
// queues; the rest add up under "other".
// It is read from Postgres when scraped, at most once per depthEvery, in
// one indexed count of the waiting runs; every engine reports the same
// figure (take the max across engines).
type keyMetrics struct {
	admitted, queued, cancelled metric.Int64Counter
	wait                        metric.Float64Histogram
}

// DepthKeys is how many key values the depth gauge names; depthEvery is
// how often at most it reads them.
const (
	DepthKeys  = 20
	depthEvery = 15 * time.Second
)

// waitBuckets are the queue wait's bounds in seconds.
var waitBuckets = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600}

func newKeyMetrics(mp metric.MeterProvider, pool *pgxpool.Pool) (*keyMetrics, error) {
	if mp == nil {
		return nil, nil
	}
	m := mp.Meter(meterName)
	var k keyMetrics
	var err error
	counter := func(name, desc string) metric.Int64Counter {
		var c metric.Int64Counter
		if err == nil {
			c, err = m.Int64Counter(name, metric.WithUnit("{run}"), metric.WithDescription(desc))
		}
		return c
	}
	k.admitted = counter("weft.admission.key.admitted", "Starts that took a place of a plan's concurrency limit, by plan and limit.")
	k.queued = counter("weft.admission.key.queued", "Runs that began waiting in a concurrency limit's queue, by plan and limit.")
	k.cancelled = counter("weft.admission.key.cancelled", "Runs a concurrency limit cancelled (CANCEL_NEWEST, CANCEL_OLDEST), by plan and limit.")
	if err == nil {
		k.wait, err = m.Float64Histogram("weft.admission.key.wait", metric.WithUnit("s"),
			metric.WithDescription("How long a run waited in a concurrency limit's queue before it started, by plan and limit."),
			metric.WithExplicitBucketBoundaries(waitBuckets...))
	}
	if err == nil {
		err = observeDepth(m, pool)
	}
	if err != nil {
		return nil, fmt.Errorf("engine: metrics: %w", err)
	}
	return &k, nil
}

// record counts what the committed rounds' admissions did.
func (k *keyMetrics) record(ctx context.Context, events []round.KeyEvent) {
	if k == nil {
		return
	}
	for _, e := range events {
		attrs := metric.WithAttributes(attribute.String("plan", e.Key.Plan), attribute.String("limit", e.Key.Rule))
		switch e.Outcome {
		case round.KeyAdmitted:
			k.admitted.Add(ctx, 1, attrs)
			if e.Waited > 0 {
				k.wait.Record(ctx, e.Waited.Seconds(), attrs)
			}
		case round.KeyQueued:
			k.queued.Add(ctx, 1, attrs)
		case round.KeyCancelled:
			k.cancelled.Add(ctx, int64(e.Count), attrs)
		}
	}
}

// depthSQL counts the waiting runs of the DepthKeys deepest queues, and
// of all of them.
const depthSQL = `
	WITH q AS (SELECT key_slot, count(*) AS n FROM engine_runs WHERE key_slot IS NOT NULL GROUP BY key_slot)
	SELECT key_slot, n, (SELECT coalesce(sum(n), 0) FROM q) FROM q ORDER BY n DESC, key_slot LIMIT $1`

// observeDepth registers weft.admission.key.depth, read through a
// cache of depthEvery.
func observeDepth(m metric.Meter, pool *pgxpool.Pool) error {
	var mu sync.Mutex
	var read time.Time
	var last map[string]int64
	g, err := m.Int64ObservableGauge("weft.admission.key.depth", metric.WithUnit("{run}"),
		metric.WithDescription(fmt.Sprintf("Runs waiting in a concurrency limit's queue, by key value: the %d deepest queues, the rest as key=\"other\".", DepthKeys)))
	if err != nil {
		return err
	}
	_, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(read) >= depthEvery {
			if depths, err := readDepths(ctx, pool); err == nil {
				last, read = depths, time.Now()
			}
		}
		for key, n := range last {
			o.ObserveInt64(g, n, metric.WithAttributes(attribute.String("key", key)))
		}
		return nil
	}, g)
	return err
}

func readDepths(ctx context.Context, pool *pgxpool.Pool) (map[string]int64, error) {
	rows, err := pool.Query(ctx, depthSQL, DepthKeys)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	var named, total int64
	for rows.Next() {
		var slot string
		var n int64
		if err := rows.Scan(&slot, &n, &total); err != nil {
			return nil, err
		}
		out[slotLabel(slot)] = n
		named += n
	}
	if total > named {
		out["other"] = total - named
	}
	return out, rows.Err()
}

// slotLabel renders a slot (admission.KeysOf: environment, plan, limit,
// value) for people: "plan limit value".
func slotLabel(slot string) string {
	return strings.Join(strings.Split(slot, "\x1f")[1:], " ")
}
