package projector

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/internal/boot/scrapecache"
	"github.com/weftrun/weft/services/projector/internal/readapi"
)

// gaugeTimeout bounds the queries behind the projector's gauges.
const gaugeTimeout = 2 * time.Second

// The projector's scrape-time gauges, read from run_snapshots and kept for
// scrapecache.DefaultTTL, so a burst of scrapes costs one read:
//
//	weft.projector.gaps.open  gauge {run}  runs halted on an open runSeq gap (STALE)
//	weft.runs                 gauge {run}  runs by status, as the snapshots have them
//
// Every projector reads the same table, so they all report the same
// figures: aggregate them with max, not sum. weft.runs counts the whole
// table with a GROUP BY; the status is a closed set, so the series are few,
// and a status no run has (readapi.RunStatuses) is reported as 0 rather than
// dropped.
type gauges struct {
	gaps metric.Int64ObservableGauge
	runs metric.Int64ObservableGauge
}

// gaugeReading is one read of the gauges' figures.
type gaugeReading struct {
	gaps int64
	runs map[string]int64 // by status
}

const (
	openGapsSQL     = `SELECT count(*) FROM run_snapshots WHERE gap_seen_seq IS NOT NULL`
	runsByStatusSQL = `SELECT status, count(*) FROM run_snapshots GROUP BY status`
)

// registerGauges registers the gauges' callback; Serve unregisters it when
// it returns.
func (s *Service) registerGauges() (metric.Registration, error) {
	m := s.metrics.meter
	var g gauges
	var err error
	if g.gaps, err = m.Int64ObservableGauge("weft.projector.gaps.open", metric.WithUnit("{run}"),
		metric.WithDescription("Runs halted on an open runSeq gap (STALE), waiting for the log to fill it.")); err != nil {
		return nil, fmt.Errorf("projector: metrics: %w", err)
	}
	if g.runs, err = m.Int64ObservableGauge("weft.runs", metric.WithUnit("{run}"),
		metric.WithDescription("Runs by status, from the projector's snapshots.")); err != nil {
		return nil, fmt.Errorf("projector: metrics: %w", err)
	}
	cache := scrapecache.New(0, s.readGauges)
	reg, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		r, err := cache.Get(ctx)
		if err != nil {
			return err
		}
		o.ObserveInt64(g.gaps, r.gaps)
		for _, st := range readapi.RunStatuses {
			o.ObserveInt64(g.runs, r.runs[string(st)], metric.WithAttributes(attribute.String("status", string(st))))
		}
		return nil
	}, g.gaps, g.runs)
	if err != nil {
		return nil, fmt.Errorf("projector: metrics: %w", err)
	}
	return reg, nil
}

// readGauges reads the open gaps and the runs by status, within
// gaugeTimeout.
func (s *Service) readGauges(ctx context.Context) (gaugeReading, error) {
	ctx, cancel := context.WithTimeout(ctx, gaugeTimeout)
	defer cancel()
	r := gaugeReading{runs: make(map[string]int64, len(readapi.RunStatuses))}
	if err := s.pool.QueryRow(ctx, openGapsSQL).Scan(&r.gaps); err != nil {
		return r, fmt.Errorf("projector: open gaps gauge: %w", err)
	}
	rows, err := s.pool.Query(ctx, runsByStatusSQL)
	if err != nil {
		return r, fmt.Errorf("projector: runs gauge: %w", err)
	}
	var status string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error {
		r.runs[status] = n
		return nil
	}); err != nil {
		return r, fmt.Errorf("projector: runs gauge: %w", err)
	}
	return r, nil
}
