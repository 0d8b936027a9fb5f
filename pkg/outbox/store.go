package outbox

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/internal/store/pipetx"
)

// row is one claimed outbox row.
type row struct {
	id        int64
	partition int
	orderKey  string
	subject   string
	headers   map[string]string
	payload   []byte
	dedupeID  string
	attempts  int
	createdAt time.Time
}

// claimSQL reads the next rows of each of the partitions $1, up to $2 a
// partition, each partition's in id order: a worker serves the partitions
// its relay holds with one claim, and every key lives in one partition, so
// per-key order needs nothing across partitions. It is not a high-water
// mark: ids are drawn before commit, so a row with a smaller id may become
// visible after a larger one was published, and it is picked up by the
// next claim. A row is held back while an earlier-or-same row of its order
// key waits out a backoff (next_attempt_at in the future), so a later row
// never overtakes a failing one. Only the partitions' owner (the advisory
// lock holder) runs it, so no row locks are needed.
//
// The order keys in backoff (held, usually none) are read once, through
// outbox_backoff, before the rows: asked per row, as a correlated
// NOT EXISTS, the planner could answer each row with a scan of every
// earlier id, as it does on a plan cached while the outbox looked empty.
// Each partition is walked on its own (LATERAL), so a partition with a
// backlog does not starve the others of their share of a claim.
const claimSQL = `
WITH held AS MATERIALIZED (
	SELECT order_key, min(id) AS from_id FROM outbox
	WHERE partition = ANY ($1::int[]) AND next_attempt_at > now()
	GROUP BY partition, order_key)
SELECT o.id, o.partition, o.order_key, o.subject, o.headers, o.payload, o.dedupe_id, o.attempts, o.created_at
FROM unnest($1::int[]) AS p(partition),
LATERAL (
	SELECT o.* FROM outbox AS o
	WHERE o.partition = p.partition
	  AND NOT EXISTS (SELECT 1 FROM held AS h WHERE h.order_key = o.order_key AND h.from_id <= o.id)
	ORDER BY o.id
	LIMIT $2) AS o`

// outboxClaim returns up to limit publishable rows of each of partitions,
// partition by partition, each in id order, in a transaction of one round
// trip (BEGIN, the prelude, the claim, COMMIT) that probes the indexes
// only (queuePlans).
func outboxClaim(ctx context.Context, pool *pgxpool.Pool, partitions []int32, limit int) ([]row, error) {
	var out []row
	err := pipetx.BeginFunc(ctx, pool, queuePlans, func(tx *pipetx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(claimSQL, partitions, limit).Query(func(rows pgx.Rows) error {
			var err error
			out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
				var x row
				err := r.Scan(&x.id, &x.partition, &x.orderKey, &x.subject, &x.headers, &x.payload, &x.dedupeID, &x.attempts, &x.createdAt)
				return x, err
			})
			return err
		})
		return tx.CommitBatch(ctx, b)
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: claim partitions %v: %w", partitions, err)
	}
	return out, nil
}

// queuePlansSQL is the prelude of the relay's statements: pipetx.KeyPlansSQL
// and no bitmap scans or sorts either, so a claim walks an index in id order
// and stops at its limit. The outbox is a queue: its heap and indexes keep
// the size of the largest backlog they held, with a handful of live rows
// in them, and the planner, pricing the indexes by their size, would scan
// the whole heap, or fetch a partition's every row and sort them; with
// only index probes left, a claim on a bloated table stays an index walk
// (BenchmarkSystemParked measures it).
const queuePlansSQL = pipetx.KeyPlansSQL + `,
	set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true)`

var queuePlans = []string{queuePlansSQL}

// nextDueSQL reads the earliest backoff of the partitions $1 through
// outbox_backoff, in microseconds from now on the database clock.
const nextDueSQL = `
SELECT (extract(epoch FROM min(next_attempt_at) - clock_timestamp()) * 1e6)::bigint
FROM outbox WHERE partition = ANY ($1::int[]) AND next_attempt_at > now()`

// outboxNextDue returns how long until the earliest backoff in partitions
// expires, measured on the database clock, or ok=false when no row waits.
func outboxNextDue(ctx context.Context, pool *pgxpool.Pool, partitions []int32) (wait time.Duration, ok bool, err error) {
	var us *int64
	err = pipetx.BeginFunc(ctx, pool, queuePlans, func(tx *pipetx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(nextDueSQL, partitions).QueryRow(func(r pgx.Row) error { return r.Scan(&us) })
		return tx.CommitBatch(ctx, b)
	})
	if err != nil {
		return 0, false, fmt.Errorf("outbox: next due in partitions %v: %w", partitions, err)
	}
	if us == nil {
		return 0, false, nil
	}
	return max(time.Duration(*us)*time.Microsecond, 0), true, nil
}

// settlement is what a batch's outcome does to its rows.
type settlement struct {
	published []int64    // delete
	retries   []retryRow // charge an attempt, back off
	dead      []retryRow // move to outbox_dead
}

type retryRow struct {
	id    int64
	err   string
	delay time.Duration
}

func (s settlement) empty() bool {
	return len(s.published) == 0 && len(s.retries) == 0 && len(s.dead) == 0
}

// The settlements take the worker's partitions and the first and last id
// of their rows ($1 to $3), so that each walks the key (partition, id)
// between its ids: on a cached generic plan, id = ANY($4) alone was a
// filter over the partition's every row, not a bound.
const (
	deleteSQL = `
DELETE FROM outbox WHERE partition = ANY ($1::int[]) AND id BETWEEN $2 AND $3 AND id = ANY($4)`
	retrySQL = `
UPDATE outbox AS o
SET attempts = o.attempts + 1, last_error = u.err,
    next_attempt_at = clock_timestamp() + u.delay_us * interval '1 microsecond'
FROM unnest($4::bigint[], $5::text[], $6::bigint[]) AS u(id, err, delay_us)
WHERE o.partition = ANY ($1::int[]) AND o.id BETWEEN $2 AND $3 AND o.id = u.id`
	deadSQL = `
WITH u AS (SELECT * FROM unnest($4::bigint[], $5::text[]) AS u(id, err)),
moved AS (
	DELETE FROM outbox AS o USING u
	WHERE o.partition = ANY ($1::int[]) AND o.id BETWEEN $2 AND $3 AND o.id = u.id
	RETURNING o.id, o.partition, o.order_key, o.subject, o.headers, o.payload, o.dedupe_id,
	          o.attempts, o.next_attempt_at, o.created_at, o.version, u.err)
INSERT INTO outbox_dead (id, partition, order_key, subject, headers, payload, dedupe_id,
                         attempts, next_attempt_at, last_error, created_at, version)
SELECT id, partition, order_key, subject, headers, payload, dedupe_id,
       attempts + 1, next_attempt_at, err, created_at, version
FROM moved
ON CONFLICT (id) DO UPDATE SET
	partition = EXCLUDED.partition, order_key = EXCLUDED.order_key, subject = EXCLUDED.subject,
	headers = EXCLUDED.headers, payload = EXCLUDED.payload, dedupe_id = EXCLUDED.dedupe_id,
	attempts = EXCLUDED.attempts, next_attempt_at = EXCLUDED.next_attempt_at,
	last_error = EXCLUDED.last_error, created_at = EXCLUDED.created_at, version = EXCLUDED.version,
	failed_at = clock_timestamp()`
)

// outboxSettle applies s, a batch of rows of partitions, in one transaction
// of one round trip (BEGIN, the prelude, the batch, COMMIT): published
// rows are deleted, failed rows charged, dead rows moved to outbox_dead.
func outboxSettle(ctx context.Context, pool *pgxpool.Pool, partitions []int32, s settlement) error {
	if s.empty() {
		return nil
	}
	b := &pgx.Batch{}
	if len(s.published) > 0 {
		b.Queue(deleteSQL, partitions, slices.Min(s.published), slices.Max(s.published), s.published)
	}
	if len(s.retries) > 0 {
		ids, errs, delays := make([]int64, len(s.retries)), make([]string, len(s.retries)), make([]int64, len(s.retries))
		for i, r := range s.retries {
			ids[i], errs[i], delays[i] = r.id, r.err, r.delay.Microseconds()
		}
		b.Queue(retrySQL, partitions, slices.Min(ids), slices.Max(ids), ids, errs, delays)
	}
	if len(s.dead) > 0 {
		ids, errs := make([]int64, len(s.dead)), make([]string, len(s.dead))
		for i, r := range s.dead {
			ids[i], errs[i] = r.id, r.err
		}
		b.Queue(deadSQL, partitions, slices.Min(ids), slices.Max(ids), ids, errs)
	}
	err := pipetx.BeginFunc(ctx, pool, queuePlans, func(tx *pipetx.Tx) error {
		return tx.CommitBatch(ctx, b)
	})
	if err != nil {
		return fmt.Errorf("outbox: settle batch: %w", err)
	}
	return nil
}
