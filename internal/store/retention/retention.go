// Package retention keeps Weft's Postgres storage within its retention. A
// Keeper deletes each run that ended more than the run retention ago, with
// everything that belongs to it, and creates the event log's monthly
// partitions ahead of the calendar (docs/event-log.md), so that a month can
// be dropped whole once its runs are gone.
//
// A run is deleted only when all of these hold, checked again under the
// run head's row lock in the deleting transaction:
//   - its log holds a terminal event (RunCompleted, RunFailed, RunCancelled);
//   - the engine no longer holds it (no engine_runs row);
//   - nothing was appended to it for the retention (run_heads.updated_at).
//
// So a run that is running, paused, queued or awaiting approval is never
// touched, however old, and a signal appended to an ended run restarts its
// clock. Deleting a run removes its events and head (weft_run_delete), its
// snapshot and alerts, its signal acceptances, timers, checkpoint and
// activity reconciliation records. Run requests are kept until their own retention
// (the gateway's), so a repeated start request inside that window still
// answers with the deleted run's id rather than starting a new run.
//
// The Keeper needs the schema owner's privileges: weft_run_delete and the
// partition functions are owner-only (deploy/postgres/grants.sql).
package retention

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/periodic"
)

// Defaults of Config.
const (
	DefaultRunRetention    = 30 * 24 * time.Hour
	DefaultBatch           = 200
	DefaultPartitionsAhead = 3
)

// Config tunes a Keeper. The zero value of each field means its default.
type Config struct {
	// RunRetention is how long an ended run is kept after its last event.
	// Negative keeps every run forever (partitions are still created).
	RunRetention time.Duration
	// Batch bounds the runs one transaction deletes.
	Batch int
	// PartitionsAhead is how many monthly partitions, from the current
	// month, exist after a pass.
	PartitionsAhead int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives a line per pass that deleted something; nil means
	// slog.Default.
	Logger *slog.Logger
}

// Report is what one pass did.
type Report struct {
	// RunsDeleted counts the runs deleted, with everything of theirs.
	RunsDeleted int
	// PartitionsCreated counts the monthly partitions created.
	PartitionsCreated int
}

// Keeper applies the retention to one database.
type Keeper struct {
	pool *pgxpool.Pool
	cfg  Config
}

// New returns a Keeper over pool, whose database has the Weft schema and
// whose role owns it.
func New(pool *pgxpool.Pool, cfg Config) *Keeper {
	cfg.RunRetention = cmp.Or(cfg.RunRetention, DefaultRunRetention)
	cfg.Batch = cmp.Or(cfg.Batch, DefaultBatch)
	cfg.PartitionsAhead = cmp.Or(cfg.PartitionsAhead, DefaultPartitionsAhead)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Keeper{pool: pool, cfg: cfg}
}

// Run makes a pass now and then one every interval until ctx ends. A
// failed pass is logged and retried at the next interval; Run returns only
// ctx's error.
func (k *Keeper) Run(ctx context.Context, every time.Duration) error {
	loop := periodic.Loop{Interval: every, Immediate: true, Logger: k.cfg.Logger, Failed: "retention: pass failed"}
	loop.Run(ctx, func(ctx context.Context) error {
		_, err := k.Pass(ctx)
		return err
	})
	return ctx.Err()
}

// Pass creates the missing partitions, then deletes ended runs past the
// retention, a batch per transaction, until none is left.
func (k *Keeper) Pass(ctx context.Context) (Report, error) {
	var rep Report
	now := k.cfg.Now().UTC()
	created, err := k.partitions(ctx, now)
	rep.PartitionsCreated = created
	if err != nil {
		return rep, err
	}
	if k.cfg.RunRetention < 0 {
		return rep, nil
	}
	cutoff := now.Add(-k.cfg.RunRetention)
	for {
		n, err := k.deleteBatch(ctx, cutoff)
		rep.RunsDeleted += n
		if err != nil {
			return rep, err
		}
		if n < k.cfg.Batch {
			break
		}
	}
	if rep.RunsDeleted > 0 || rep.PartitionsCreated > 0 {
		k.cfg.Logger.InfoContext(ctx, "retention: pass", "runs_deleted", rep.RunsDeleted,
			"partitions_created", rep.PartitionsCreated, "cutoff", cutoff)
	}
	return rep, nil
}

// partitions ensures the monthly partitions from now's month on and returns
// how many it created.
func (k *Keeper) partitions(ctx context.Context, now time.Time) (int, error) {
	var created int
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	err := k.pool.QueryRow(ctx, `SELECT weft_event_partitions_ensure($1::date, $2)`,
		month, k.cfg.PartitionsAhead).Scan(&created)
	if err != nil {
		return 0, fmt.Errorf("retention: ensure partitions: %w", err)
	}
	return created, nil
}

// candidatesSQL finds ended runs past the cutoff. The run-id bound ($1, the
// smallest id of a run created at the cutoff) is a range scan of the head's
// primary key: a run created after the cutoff cannot have ended before it.
const candidatesSQL = `
SELECT h.run_id::text FROM run_heads h
WHERE h.run_id < $1::uuid AND h.updated_at < $2
  AND NOT EXISTS (SELECT 1 FROM engine_runs r WHERE r.run_id = h.run_id)
  AND EXISTS (SELECT 1 FROM run_events e WHERE e.run_id = h.run_id
              AND e.event_type IN ('RunCompleted', 'RunFailed', 'RunCancelled'))
ORDER BY h.run_id
LIMIT $3`

// lockSQL keeps the candidates that still qualify and locks their heads, so
// no append to them commits while they are deleted.
const lockSQL = `
SELECT h.run_id::text FROM run_heads h
WHERE h.run_id = ANY($1::uuid[]) AND h.updated_at < $2
  AND NOT EXISTS (SELECT 1 FROM engine_runs r WHERE r.run_id = h.run_id)
ORDER BY h.run_id
FOR UPDATE OF h`

// ownedTables hold rows keyed by run_id that die with their run. Tables
// that reference run_heads (activity_reconciliations, run_checkpoints)
// lose theirs by ON DELETE CASCADE when weft_run_delete deletes the head.
var ownedTables = []string{"run_snapshots", "projector_alerts", "signal_acceptances", "engine_timers"}

// deleteBatch deletes up to Batch runs in one transaction and returns how
// many it found to delete.
func (k *Keeper) deleteBatch(ctx context.Context, cutoff time.Time) (int, error) {
	var found int
	err := pgx.BeginFunc(ctx, k.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, candidatesSQL, events.RunIDFloor(cutoff), cutoff, k.cfg.Batch)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		found = len(ids)
		if rows, err = tx.Query(ctx, lockSQL, ids, cutoff); err != nil {
			return err
		}
		if ids, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		return deleteRuns(ctx, tx, ids)
	})
	if err != nil {
		return 0, fmt.Errorf("retention: delete ended runs: %w", err)
	}
	return found, nil
}

// deleteRuns deletes ids' events and heads (weft_run_delete) and the rows
// they own, through tx.
func deleteRuns(ctx context.Context, tx pgx.Tx, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT weft_run_delete(id) FROM unnest($1::uuid[]) AS id`, ids)
	for _, table := range ownedTables {
		b.Queue(`DELETE FROM `+table+` WHERE run_id = ANY($1::uuid[])`, ids)
	}
	return tx.SendBatch(ctx, b).Close()
}
