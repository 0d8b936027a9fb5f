package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// getTx reads job bulkID of tenant and its request digest, or NotFound.
func getTx(ctx context.Context, q querier, tenant, bulkID string) (api.BulkJob, []byte, error) {
	var j api.BulkJob
	var filter, reasons []byte
	var digest []byte
	err := q.QueryRow(ctx, `SELECT tenant_id, bulk_id, action, filter, request_digest, status, matched, done, skipped,
		failed, skipped_reasons, created_at, ended_at FROM bulk_jobs WHERE tenant_id = $1 AND bulk_id = $2`, tenant, bulkID).
		Scan(&j.TenantID, &j.BulkID, &j.Action, &filter, &digest, &j.Status, &j.Matched, &j.Done, &j.Skipped,
			&j.Failed, &reasons, &j.CreatedAt, &j.EndedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return api.BulkJob{}, nil, &intake.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no bulk job %q", bulkID),
			Details: map[string]any{"bulkId": bulkID}}
	}
	if err != nil {
		return api.BulkJob{}, nil, fmt.Errorf("bulk: read job %s: %w", bulkID, err)
	}
	if err := json.Unmarshal(filter, &j.Filter); err != nil {
		return api.BulkJob{}, nil, fmt.Errorf("bulk: job %s's filter: %w", bulkID, err)
	}
	if err := json.Unmarshal(reasons, &j.SkippedReasons); err != nil {
		return api.BulkJob{}, nil, fmt.Errorf("bulk: job %s's skip reasons: %w", bulkID, err)
	}
	j.CreatedAt = j.CreatedAt.UTC()
	if j.EndedAt != nil {
		*j.EndedAt = j.EndedAt.UTC()
	}
	return j, digest, nil
}

// matchSQL is the condition on run_snapshots of tenant's runs f matches,
// with its arguments numbered from $first.
func matchSQL(tenant string, f api.BulkFilter, first int) (string, []any) {
	var b conds
	b.n = first - 1
	b.add("tenant_id = $%d", tenant)
	if len(f.Status) > 0 {
		b.add("status = ANY($%d::text[])", f.Status)
	}
	if f.PlanID != "" {
		b.add("plan_id = $%d", f.PlanID)
	}
	if f.PlanVersion != "" {
		b.add("plan_version = $%d", f.PlanVersion)
	}
	if f.Parent != "" {
		b.add("parent_run_id = $%d::uuid", f.Parent)
	}
	if len(f.Labels) > 0 {
		labels, _ := json.Marshal(f.Labels)
		b.add("labels @> $%d::jsonb", string(labels))
	}
	return b.sql, b.args
}

// conds builds an AND of conditions with numbered arguments.
type conds struct {
	sql  string
	args []any
	n    int
}

func (c *conds) add(format string, arg any) {
	c.n++
	if c.sql != "" {
		c.sql += " AND "
	}
	c.sql += fmt.Sprintf(format, c.n)
	c.args = append(c.args, arg)
}

// progress is what one batch did.
type progress struct {
	done, skipped, failed int64
	reasons               map[string]int
	last                  int64 // the seq of the batch's last run
}

// add adds o's counts to p's.
func (p *progress) add(o progress) {
	p.done, p.skipped, p.failed = p.done+o.done, p.skipped+o.skipped, p.failed+o.failed
	for reason, n := range o.reasons {
		if p.reasons == nil {
			p.reasons = map[string]int{}
		}
		p.reasons[reason] += n
	}
}

// skip counts a run skipped for reason.
func (p *progress) skip(reason string) {
	p.skipped++
	if p.reasons == nil {
		p.reasons = map[string]int{}
	}
	p.reasons[reason]++
}

// record adds p to job k's counters and moves its cursor, renewing the
// lease token holds; finished ends a RUNNING job DONE. It returns the
// job's status after, or "" when the lease was lost.
func record(ctx context.Context, q querier, k jobKey, token string, p progress, finished bool, now time.Time, lease time.Duration) (string, error) {
	if p.reasons == nil {
		p.reasons = map[string]int{}
	}
	reasons, err := json.Marshal(p.reasons)
	if err != nil {
		return "", err
	}
	var status string
	err = q.QueryRow(ctx, `UPDATE bulk_jobs SET done = done + $4, skipped = skipped + $5, failed = failed + $6,
		    skipped_reasons = (SELECT coalesce(jsonb_object_agg(key, to_jsonb(sum)), '{}') FROM (
		        SELECT key, sum(value::bigint) FROM (
		            SELECT * FROM jsonb_each_text(skipped_reasons) UNION ALL SELECT * FROM jsonb_each_text($7::jsonb)) r
		        GROUP BY key) s),
		    cursor_seq = $8, updated_at = $9, claimed_until = $10,
		    status = CASE WHEN status = 'RUNNING' AND $11 THEN 'DONE' ELSE status END,
		    ended_at = CASE WHEN status = 'RUNNING' AND $11 THEN $9 ELSE ended_at END
		WHERE tenant_id = $1 AND bulk_id = $2 AND claim_token = $3 RETURNING status`,
		k.tenant, k.bulkID, token, p.done, p.skipped, p.failed, string(reasons), p.last, now, now.Add(lease), finished).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return status, err
}

// jobKey names a job.
type jobKey struct{ tenant, bulkID string }

func (k jobKey) String() string { return k.tenant + "/" + k.bulkID }
