package projector

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/periodic"
)

// resyncLoop, every ResyncEvery, clears the AlertForged rows older than
// ForgedAlertFor and reads back from the log the runs whose gap is still
// open, the runs not yet ended whose snapshot has been behind the log's
// head for ResyncLag, and the runs approved about ResyncLag ago that have
// no snapshot at all: their messages were lost, or are stuck behind a
// relay that is down. A lost message costs latency, never a snapshot.
//
// Each pass costs the same whatever the number of runs: the open runs are
// looked at ResyncScan at a time (openScan), the unseen ones in a window
// of run ids (unseenWindow), the gaps through their own index.
func (s *Service) resyncLoop(ctx context.Context) {
	var scan openScan
	loop := periodic.Loop{Interval: s.cfg.ResyncEvery, Logger: s.logger, Failed: "projector: alerts not expired"}
	loop.Run(ctx, func(ctx context.Context) error {
		if err := s.resyncOnce(ctx, &scan); err != nil && ctx.Err() == nil {
			s.logger.WarnContext(ctx, "projector: resync failed", "err", err)
		}
		return s.expireForgedAlerts(ctx)
	})
}

// resyncCandidatesSQL finds the runs to read back. The second part looks
// only at run ids (UUIDv7, so creation times) in [$2, $3), a window of at
// least 10 s that ends ResyncLag ago, through run_heads' primary key: each
// run is looked at a few times, never the whole table.
const resyncCandidatesSQL = `
(SELECT run_id::text FROM run_snapshots WHERE gap_seen_seq IS NOT NULL ORDER BY gap_since LIMIT $1)
UNION
(SELECT h.run_id::text FROM run_heads h
 WHERE h.run_id >= $2::uuid AND h.run_id < $3::uuid
   AND NOT EXISTS (SELECT 1 FROM run_snapshots s WHERE s.run_id = h.run_id)
 LIMIT $1)`

// openScanSQL looks at the next $2 runs not yet ended after run id $1, in
// run id order (run_snapshots_open), and returns the last one looked at,
// how many, and those of them whose snapshot has not moved for ResyncLag
// ($3) and is behind the log's head, at most $4.
const openScanSQL = `
WITH chunk AS (
  SELECT run_id, last_event_seq, updated_at FROM run_snapshots
  WHERE status NOT IN ('COMPLETED', 'FAILED', 'CANCELLED') AND run_id > $1::uuid
  ORDER BY run_id LIMIT $2)
SELECT coalesce((SELECT run_id::text FROM chunk ORDER BY run_id DESC LIMIT 1), ''), (SELECT count(*) FROM chunk),
  array(SELECT c.run_id::text FROM chunk c JOIN run_heads h USING (run_id)
        WHERE c.updated_at < clock_timestamp() - $3::interval AND h.head_seq > c.last_event_seq
        LIMIT $4)`

// openScan is where the resync loop's look at the open runs stands: the
// last run id of the previous pass's chunk. With more open runs than
// ResyncScan, each pass looks at the next ResyncScan of them and the scan
// wraps around at the end, so a run behind its log is found within
// ResyncLag plus ceil(open runs / ResyncScan) passes; runs parked on a
// signal by the hundred thousand cost each pass no more than ResyncScan
// of them.
type openScan struct{ after string }

// next returns the runs of the next chunk whose snapshot is behind the
// log, at most limit, and moves the scan past the chunk.
func (o *openScan) next(ctx context.Context, pool *pgxpool.Pool, cfg Config, limit int) ([]string, error) {
	var last string
	var n int
	var behind []string
	err := pool.QueryRow(ctx, openScanSQL, cmp.Or(o.after, minRunID), cfg.ResyncScan, cfg.ResyncLag, limit).
		Scan(&last, &n, &behind)
	if err != nil {
		return nil, err
	}
	o.after = last
	if n < cfg.ResyncScan {
		o.after = "" // the end: the next pass starts over
	}
	return behind, nil
}

// minUnseenWindow is the shortest window the unseen-run scan covers, so
// that a slow round of the loop cannot step over a run; it bounds a scan
// to the runs approved in that window.
const minUnseenWindow = 10 * time.Second

// unseenWindow returns the run-id range of the runs approved between
// ResyncLag + max(4·ResyncEvery, minUnseenWindow) and ResyncLag ago.
func (s *Service) unseenWindow(now time.Time) (lo, hi string) {
	end := now.Add(-s.cfg.ResyncLag)
	return events.RunIDFloor(end.Add(-max(4*s.cfg.ResyncEvery, minUnseenWindow))), events.RunIDFloor(end)
}

// resyncOnce resyncs one round of candidates.
func (s *Service) resyncOnce(ctx context.Context, scan *openScan) error {
	lo, hi := s.unseenWindow(time.Now())
	rows, err := s.pool.Query(ctx, resyncCandidatesSQL, defaultResyncRunsMax, lo, hi)
	if err != nil {
		return fmt.Errorf("projector: find runs to resync: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("projector: find runs to resync: %w", err)
	}
	behind, err := scan.next(ctx, s.pool, s.cfg, defaultResyncRunsMax)
	if err != nil {
		return fmt.Errorf("projector: scan open runs: %w", err)
	}
	if len(ids)+len(behind) == 0 {
		return nil
	}
	byRun := make(map[string][]events.Event, len(ids)+len(behind))
	for _, id := range append(ids, behind...) {
		byRun[id] = nil // nil: resync from the log
	}
	_, err = s.applyRuns(ctx, byRun)
	return err
}
