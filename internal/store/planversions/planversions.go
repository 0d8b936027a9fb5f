// Package planversions reads and writes the plan_versions table, the
// registered plans (docs/api.md, "Registered plans"): the gateway's
// registry pushes, lists, archives and restores versions through it, and
// both the registry and the engine, which starts child runs by planRef,
// resolve a planRef with Resolve. It knows the rows, not the callers:
// authorization and the API's error shapes are theirs.
package planversions

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/weftrun/weft/pkg/api"
)

// RowVersion is the persisted-format version every plan_versions row is
// written with (docs/persisted-format.md).
const RowVersion = 1

// Querier is a pool or a transaction.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Key names a plan version.
type Key struct{ TenantID, ProjectID, PlanID, PlanVersion string }

// Record is a plan_versions row: the version as the API shows it, its
// push order and the SHA-256 of its plan's canonical JSON.
type Record struct {
	api.PlanVersion
	Seq       int64
	RawDigest []byte
}

// columns are the columns scanRecord reads, in its order.
const columns = `seq, tenant_id, project_id, plan_id, plan_version, plan_digest, created_at, archived_at, plan`

// summaryColumns are columns with the plan left out, for lists.
const summaryColumns = `seq, tenant_id, project_id, plan_id, plan_version, plan_digest, created_at, archived_at, NULL::jsonb`

func scanRecord(row pgx.Row) (*Record, error) {
	var r Record
	v := &r.PlanVersion
	err := row.Scan(&r.Seq, &v.TenantID, &v.ProjectID, &v.PlanID, &v.PlanVersion, &r.RawDigest, &v.CreatedAt,
		&v.ArchivedAt, &v.Plan)
	if err != nil {
		return nil, err
	}
	v.Digest = DigestString(r.RawDigest)
	v.CreatedAt = v.CreatedAt.UTC()
	if v.ArchivedAt != nil {
		*v.ArchivedAt = v.ArchivedAt.UTC()
	}
	return &r, nil
}

// DigestString is a digest as the API shows it.
func DigestString(d []byte) string { return "sha256:" + hex.EncodeToString(d) }

// one reads the one row of row, nil when there is none.
func one(row pgx.Row, what string) (*Record, error) {
	r, err := scanRecord(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("planversions: %s: %w", what, err)
	}
	return r, nil
}

// Insert stores a new version k of plan doc with its digest at now and
// returns it, or nil when k is stored already.
func Insert(ctx context.Context, q Querier, k Key, doc []byte, digest []byte, now time.Time) (*Record, error) {
	return one(q.QueryRow(ctx, `
		INSERT INTO plan_versions (version, tenant_id, project_id, plan_id, plan_version, plan, plan_digest, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (tenant_id, project_id, plan_id, plan_version) DO NOTHING
		RETURNING `+columns,
		RowVersion, k.TenantID, k.ProjectID, k.PlanID, k.PlanVersion, doc, digest, now), "insert")
}

// Get reads version k, nil when there is none.
func Get(ctx context.Context, q Querier, k Key) (*Record, error) {
	return one(q.QueryRow(ctx, `SELECT `+columns+` FROM plan_versions
		WHERE tenant_id = $1 AND project_id = $2 AND plan_id = $3 AND plan_version = $4`,
		k.TenantID, k.ProjectID, k.PlanID, k.PlanVersion), "read")
}

// Latest reads the newest version of k's plan that is not archived
// (k.PlanVersion is not read), nil when there is none.
func Latest(ctx context.Context, q Querier, k Key) (*Record, error) {
	return one(q.QueryRow(ctx, `SELECT `+columns+` FROM plan_versions
		WHERE tenant_id = $1 AND project_id = $2 AND plan_id = $3 AND archived_at IS NULL
		ORDER BY seq DESC LIMIT 1`, k.TenantID, k.ProjectID, k.PlanID), "read latest")
}

// SetArchived archives version k at now (keeping an earlier archive time)
// or, with at nil, restores it, and returns it; nil when there is no such
// version.
func SetArchived(ctx context.Context, q Querier, k Key, at *time.Time) (*Record, error) {
	return one(q.QueryRow(ctx, `
		UPDATE plan_versions SET archived_at = CASE WHEN $5::timestamptz IS NULL THEN NULL
		                                            ELSE coalesce(archived_at, $5) END
		WHERE tenant_id = $1 AND project_id = $2 AND plan_id = $3 AND plan_version = $4
		RETURNING `+columns, k.TenantID, k.ProjectID, k.PlanID, k.PlanVersion, at), "set archived")
}

// OfPlan returns the versions of k's plan (k.PlanVersion is not read),
// newest first, without their plans.
func OfPlan(ctx context.Context, q Querier, k Key) ([]Record, error) {
	rows, err := q.Query(ctx, `SELECT `+summaryColumns+` FROM plan_versions
		WHERE tenant_id = $1 AND project_id = $2 AND plan_id = $3 ORDER BY seq DESC`,
		k.TenantID, k.ProjectID, k.PlanID)
	if err != nil {
		return nil, fmt.Errorf("planversions: versions: %w", err)
	}
	return collect(rows)
}

// OfPlanBefore returns up to limit versions of k's plan (k.PlanVersion is
// not read) pushed before the version of seq before (0 for the newest),
// newest first, without their plans: a page of OfPlan.
func OfPlanBefore(ctx context.Context, q Querier, k Key, before int64, limit int) ([]Record, error) {
	rows, err := q.Query(ctx, `SELECT `+summaryColumns+` FROM plan_versions
		WHERE tenant_id = $1 AND project_id = $2 AND plan_id = $3 AND ($4 = 0 OR seq < $4)
		ORDER BY seq DESC LIMIT $5`, k.TenantID, k.ProjectID, k.PlanID, before, limit)
	if err != nil {
		return nil, fmt.Errorf("planversions: versions: %w", err)
	}
	return collect(rows)
}

// List returns up to limit versions of tenant, of project unless it is
// empty, pushed before the version of seq before (0 for the newest),
// newest first, without their plans.
func List(ctx context.Context, q Querier, tenant, project string, before int64, limit int) ([]Record, error) {
	rows, err := q.Query(ctx, `SELECT `+summaryColumns+` FROM plan_versions
		WHERE tenant_id = $1 AND ($2 = '' OR project_id = $2) AND ($3 = 0 OR seq < $3)
		ORDER BY seq DESC LIMIT $4`, tenant, project, before, limit)
	if err != nil {
		return nil, fmt.Errorf("planversions: list: %w", err)
	}
	return collect(rows)
}

// collect reads rows of summaryColumns.
func collect(rows pgx.Rows) ([]Record, error) {
	defer rows.Close()
	out := []Record{}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("planversions: list: %w", err)
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}

// Versions is the versions of rs.
func Versions(rs []Record) []api.PlanVersion {
	out := make([]api.PlanVersion, len(rs))
	for i, r := range rs {
		out[i] = r.PlanVersion
	}
	return out
}
