package projector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/periodic"
)

// Rebuilding: every run the log has gets a snapshot. A run whose
// run_snapshots row is missing (the rows were deleted, or the run's
// messages were lost long ago) is found by walking run_heads, the log's
// one row per run, in run id order, and is projected through applyRuns
// with no bus events: the resync path that reads a STALE run back from the
// log, here from runSeq 1. Live projection goes on meanwhile: both lock the
// run's row, so whichever commits second finds the other's watermark and
// applies only what is past it (a live batch that finds no row creates one
// and, seeing a gap from runSeq 1, resyncs from the log in the same way).

const (
	// rebuildPage is how many runs of run_heads one scan query looks at.
	rebuildPage = 1000
	// rebuildBatch is how many runs one rebuild transaction projects: each
	// holds its rows' locks, and live batches of those runs wait for it.
	rebuildBatch = 50
	// rebuildParallel is how many rebuild transactions run at once: each
	// holds a connection of the pool live projection uses too.
	rebuildParallel = 2
	// maxRunID is above every run id: a pass with it as its end has none.
	maxRunID = "ffffffff-ffff-ffff-ffff-ffffffffffff"
	// minRunID is at or below every run id.
	minRunID = "00000000-0000-0000-0000-000000000000"
)

// rebuildScanSQL looks at the next $3 runs of the log with an id in
// ($1, $2) and at least one event, through run_heads' primary key, and
// returns how many it looked at, the last one's id, those without a
// snapshot row, those whose row has no run request id recorded (a build
// older than migration 0012 projected them), and the child runs whose row
// has no parent run recorded (a build older than migration 0020 projected
// them): those whose run request id is a child's (events.ChildRunRequestID),
// and the ended runs whose row has no end time (a build older than
// migration 0021 saved them last).
const rebuildScanSQL = `
WITH page AS (
    SELECT run_id FROM run_heads
    WHERE run_id > $1::uuid AND run_id < $2::uuid AND head_seq > 0
    ORDER BY run_id LIMIT $3)
SELECT count(*), coalesce((array_agg(p.run_id::text ORDER BY p.run_id DESC))[1], ''),
       coalesce(array_agg(p.run_id::text ORDER BY p.run_id) FILTER (WHERE s.run_id IS NULL), '{}'),
       coalesce(array_agg(p.run_id::text ORDER BY p.run_id)
           FILTER (WHERE s.run_request_id IS NULL AND s.last_event_seq > 0), '{}'),
       coalesce(array_agg(p.run_id::text ORDER BY p.run_id)
           FILTER (WHERE s.parent_run_id IS NULL AND starts_with(s.run_request_id, 'child:')), '{}'),
       coalesce(array_agg(p.run_id::text ORDER BY p.run_id)
           FILTER (WHERE s.ended_at IS NULL AND s.status IN ('COMPLETED', 'FAILED', 'CANCELLED')), '{}')
FROM page p LEFT JOIN run_snapshots s USING (run_id)`

// requestIDsFillSQL records the run request id of the rows of $1 that
// have none, from their run's RunApproved in the log (an empty one when
// it names none). A row whose run has no RunApproved in the log stays
// NULL.
const requestIDsFillSQL = `
UPDATE run_snapshots s SET run_request_id = coalesce(e.event_data->>'runRequestId', '')
FROM run_events e
WHERE s.run_id = ANY($1::uuid[]) AND s.run_request_id IS NULL
  AND e.run_id = s.run_id AND e.event_type = 'RunApproved'`

// parentsFillSQL records the parent run of the rows of $1 that have none,
// from their run's RunApproved in the log. A row whose RunApproved names
// no parent, or a parent whose id is not a UUID, stays NULL: a run a
// trigger or schedule with the id "child" started, which the next passes
// look at again.
const parentsFillSQL = `
UPDATE run_snapshots s SET parent_run_id = (e.event_data->'parent'->>'runId')::uuid
FROM run_events e
WHERE s.run_id = ANY($1::uuid[]) AND s.parent_run_id IS NULL
  AND e.run_id = s.run_id AND e.event_type = 'RunApproved'
  AND e.event_data->'parent'->>'runId' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'`

// filterColumnsFillSQL records, from their stored snapshots, the columns
// of migration 0021 of the ended rows of $1 that have no end time: the
// end time (completedAt), the labels and the source of a rerun. A
// source whose id is not a UUID stays NULL.
const filterColumnsFillSQL = `
UPDATE run_snapshots SET ended_at = (snapshot->>'completedAt')::timestamptz,
    labels = coalesce(labels, snapshot->'labels'),
    rerun_of = coalesce(rerun_of, CASE WHEN snapshot->'rerunOf'->>'runId'
        ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
        THEN (snapshot->'rerunOf'->>'runId')::uuid END)
WHERE run_id = ANY($1::uuid[]) AND ended_at IS NULL`

// RebuildStats is what a rebuild did.
type RebuildStats struct {
	// Scanned counts the runs of the log looked at, Rebuilt those that had
	// no snapshot and were projected from their log.
	Scanned, Rebuilt int
	// Elapsed is the rebuild's wall time.
	Elapsed time.Duration
}

// RunsPerSecond is the rate of runs rebuilt.
func (r RebuildStats) RunsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Rebuilt) / r.Elapsed.Seconds()
}

// rebuildPass is one pass's bounds and progress: the runs with an id in
// (after, before) are looked at, page by page.
type rebuildPass struct {
	after, before string
	stats         RebuildStats
}

// rebuildPage scans the pass's next page, rebuilds its runs without a
// snapshot and records the run request ids, parent runs and filter
// columns (filterColumnsFillSQL) its rows lack.
// It returns false when the pass has no run left.
func (s *Service) rebuildPage(ctx context.Context, p *rebuildPass) (bool, error) {
	var n int
	var last string
	var missing, unnamed, orphaned, unended []string
	err := s.pool.QueryRow(ctx, rebuildScanSQL, p.after, p.before, rebuildPage).Scan(&n, &last, &missing, &unnamed, &orphaned, &unended)
	if err != nil {
		return false, fmt.Errorf("projector: scan the log's runs: %w", err)
	}
	if n == 0 {
		return false, nil
	}
	if err := s.fillFromLog(ctx, unnamed, orphaned); err != nil {
		return false, err
	}
	if len(unended) > 0 {
		if _, err := s.pool.Exec(ctx, filterColumnsFillSQL, unended); err != nil {
			return false, fmt.Errorf("projector: record end times, labels and rerun sources: %w", err)
		}
	}
	p.stats.Scanned += n
	rebuilt, err := s.rebuildMissing(ctx, missing)
	p.stats.Rebuilt += rebuilt
	if err != nil {
		return false, err
	}
	p.after = last
	return n == rebuildPage, nil
}

// fillFromLog records, from their runs' RunApproved, the run request ids
// of the rows of unnamed and the parent runs of the rows of orphaned.
func (s *Service) fillFromLog(ctx context.Context, unnamed, orphaned []string) error {
	if len(unnamed) > 0 {
		if _, err := s.pool.Exec(ctx, requestIDsFillSQL, unnamed); err != nil {
			return fmt.Errorf("projector: record run request ids: %w", err)
		}
	}
	if len(orphaned) > 0 {
		if _, err := s.pool.Exec(ctx, parentsFillSQL, orphaned); err != nil {
			return fmt.Errorf("projector: record parent runs: %w", err)
		}
	}
	return nil
}

// rebuildMissing rebuilds runIDs in transactions of rebuildBatch runs,
// rebuildParallel at a time, and returns how many it rebuilt.
func (s *Service) rebuildMissing(ctx context.Context, runIDs []string) (int, error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		rebuilt int
		first   error
	)
	sem := make(chan struct{}, rebuildParallel)
	for batch := range slices.Chunk(runIDs, rebuildBatch) {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := s.rebuildRuns(ctx, batch)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				rebuilt += len(batch)
			} else if first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	return rebuilt, first
}

// rebuildRuns projects runIDs from their log in one transaction.
func (s *Service) rebuildRuns(ctx context.Context, runIDs []string) error {
	byRun := make(map[string][]events.Event, len(runIDs))
	for _, id := range runIDs {
		byRun[id] = nil // nil: resync from the log
	}
	if _, err := s.applyRuns(withRebuild(ctx), byRun); err != nil {
		return fmt.Errorf("projector: rebuild %d runs: %w", len(runIDs), err)
	}
	s.metrics.rebuilt.Add(ctx, int64(len(runIDs)))
	return nil
}

// rebuild runs a whole pass over the runs with an id in (after, before).
func (s *Service) rebuild(ctx context.Context, after, before string) (RebuildStats, error) {
	start := time.Now()
	p := &rebuildPass{after: after, before: before}
	for {
		more, err := s.rebuildPage(ctx, p)
		p.stats.Elapsed = time.Since(start)
		if err != nil || !more {
			return p.stats, err
		}
	}
}

// rebuildLoop keeps every run of the log projected. At start it makes a
// whole pass over the log's runs approved more than ResyncLag ago (the
// newer ones are live projection's and the resync loop's); then, every
// ResyncEvery, it scans on (rebuildScan). A deleted snapshot is rebuilt
// within one cycle (runs / rebuildPage × ResyncEvery: 2,000 s for a million
// runs at the defaults), and the rest of a wholesale deletion at once once
// its first run is found.
func (s *Service) rebuildLoop(ctx context.Context) {
	stats, err := s.rebuild(ctx, minRunID, s.rebuildEnd(time.Now()))
	s.logRebuild(ctx, "start", stats, err)
	p := &rebuildPass{after: minRunID}
	periodic.Loop{Interval: s.cfg.ResyncEvery}.Run(ctx, func(ctx context.Context) error {
		p.before = s.rebuildEnd(time.Now())
		stats, err := s.rebuildScan(ctx, p)
		s.logRebuild(ctx, "scan", stats, err)
		return nil
	})
}

// rebuildScan looks at the pass's next page of runs, and goes straight on
// to the following pages while they have runs to rebuild; at the end of
// the log it wraps around. It returns what it rebuilt.
func (s *Service) rebuildScan(ctx context.Context, p *rebuildPass) (RebuildStats, error) {
	start, before := time.Now(), p.stats
	for {
		rebuilt := p.stats.Rebuilt
		more, err := s.rebuildPage(ctx, p)
		if err == nil && !more {
			p.after = minRunID // the end of the log: wrap around
		}
		if err != nil || p.stats.Rebuilt == rebuilt || ctx.Err() != nil {
			return RebuildStats{Scanned: p.stats.Scanned - before.Scanned, Rebuilt: p.stats.Rebuilt - before.Rebuilt,
				Elapsed: time.Since(start)}, err
		}
	}
}

// rebuildEnd is the end of the loop's passes: the id of the first run
// approved ResyncLag before now.
func (s *Service) rebuildEnd(now time.Time) string {
	return events.RunIDFloor(now.Add(-s.cfg.ResyncLag))
}

// logRebuild logs a pass that rebuilt runs or failed.
func (s *Service) logRebuild(ctx context.Context, pass string, st RebuildStats, err error) {
	switch {
	case err != nil && ctx.Err() == nil:
		s.logger.WarnContext(ctx, "projector: rebuild from the log failed; the next scan retries",
			"pass", pass, "runs_rebuilt", st.Rebuilt, "err", err)
	case err == nil && st.Rebuilt > 0:
		s.logger.InfoContext(ctx, "projector: rebuilt snapshots missing from run_snapshots",
			"pass", pass, "runs_scanned", st.Scanned, "runs_rebuilt", st.Rebuilt,
			"elapsed_ms", st.Elapsed.Milliseconds(), "runs_per_s", int(st.RunsPerSecond()))
	}
}

// Rebuild is one whole pass over every run the log has: each without a
// snapshot row is projected from its log, and each row without a run
// request id, or a child run's row without its parent run, gets its
// RunApproved's (`weft projector rebuild`). It
// is safe while projectors run; they keep applying live events. It
// returns what it did so far when it fails or ctx ends.
func (s *Service) Rebuild(ctx context.Context) (RebuildStats, error) {
	return s.rebuild(ctx, minRunID, maxRunID)
}

// NewRebuilder returns a Service for Rebuild alone: it needs only the
// database, neither the bus nor API keys, and must not Serve. cfg's
// Logger and MeterProvider are as for New.
func NewRebuilder(pool *pgxpool.Pool, cfg Config) (*Service, error) {
	if pool == nil {
		return nil, errors.New("projector: NewRebuilder needs a Postgres pool")
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(cfg.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("projector: metrics: %w", err)
	}
	return &Service{cfg: cfg, pool: pool, log: eventlog.New(pool), metrics: m,
		logger: cfg.Logger.With("service", "projector"), origin: uuid.NewString()}, nil
}

// rebuildKey marks a context whose applyRuns call is a rebuild.
type rebuildKey struct{}

// withRebuild marks ctx as a rebuild's: project records no lag and no
// resync for the runs it rebuilds (their events may be months old; that
// is no projection lag), and the rebuilt counter counts them instead.
func withRebuild(ctx context.Context) context.Context {
	return context.WithValue(ctx, rebuildKey{}, true)
}

// rebuilding reports whether ctx is a rebuild's.
func rebuilding(ctx context.Context) bool {
	v, _ := ctx.Value(rebuildKey{}).(bool)
	return v
}
