package registry

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

// rowVersion is the persisted-format version every plan_versions row is
// written with (docs/persisted-format.md).
const rowVersion = 1

// querier is a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Key names a plan version.
type Key struct{ TenantID, ProjectID, PlanID, PlanVersion string }

// record is a plan_versions row.
type record struct {
	api.PlanVersion
	seq    int64
	digest []byte
}

// columns are the columns scanRecord reads, in its order.
const columns = `seq, tenant_id, project_id, plan_id, plan_version, plan_digest, created_at, archived_at, plan`

// summaryColumns are columns with the plan left out, for lists.
const summaryColumns = `seq, tenant_id, project_id, plan_id, plan_version, plan_digest, created_at, archived_at, NULL::jsonb`

func scanRecord(row pgx.Row) (*record, error) {
	var r record
	v := &r.PlanVersion
	err := row.Scan(&r.seq, &v.TenantID, &v.ProjectID, &v.PlanID, &v.PlanVersion, &r.digest, &v.CreatedAt,
		&v.ArchivedAt, &v.Plan)
	if err != nil {
		return nil, err
	}
	v.Digest = digestString(r.digest)
	v.CreatedAt = v.CreatedAt.UTC()
	if v.ArchivedAt != nil {
		*v.ArchivedAt = v.ArchivedAt.UTC()
	}
	return &r, nil
}

// digestString is a digest as the API shows it.
func digestString(d []byte) string { return "sha256:" + hex.EncodeToString(d) }

// one reads the one row of row, nil when there is none.
func one(row pgx.Row, what string) (*record, error) {
	r, err := scanRecord(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("registry: %s: %w", what, err)
	}
	return r, nil
}

// versionInsert stores a new version k of plan doc with its digest at now
// and returns it, or nil when k is stored already.
func versionInsert(ctx context.Context, q querier, k Key, doc []byte, digest []byte, now time.Time) (*record, error) {
	return one(q.QueryRow(ctx, `
		INSERT INTO plan_versions (version, tenant_id, project_id, plan_id, plan_version, plan, plan_digest, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (tenant_id, project_id, plan_id, plan_version) DO NOTHING
		RETURNING `+columns,
		rowVersion, k.TenantID, k.ProjectID, k.PlanID, k.PlanVersion, doc, digest, now), "insert")
}

// versionGet reads version k, nil when there is none.
func versionGet(ctx context.Context, q querier, k Key) (*record, error) {
	return one(q.QueryRow(ctx, `SELECT `+columns+` FROM plan_versions
		WHERE tenant_id = $1 AND project_id = $2 AND plan_id = $3 AND plan_version = $4`,
		k.TenantID, k.ProjectID, k.PlanID, k.PlanVersion), "read")
}

// versionLatest reads the newest version of k's plan that is not
// archived (k.PlanVersion is not read), nil when there is none.
func versionLatest(ctx context.Context, q querier, k Key) (*record, error) {
	return one(q.QueryRow(ctx, `SELECT `+columns+` FROM plan_versions
		WHERE tenant_id = $1 AND project_id = $2 AND plan_id = $3 AND archived_at IS NULL
		ORDER BY seq DESC LIMIT 1`, k.TenantID, k.ProjectID, k.PlanID), "read latest")
}

// versionSetArchived archives version k at now (keeping an earlier
// archive time) or, with at nil, restores it, and returns it; nil when
// there is no such version.
func versionSetArchived(ctx context.Context, q querier, k Key, at *time.Time) (*record, error) {
	return one(q.QueryRow(ctx, `
		UPDATE plan_versions SET archived_at = CASE WHEN $5::timestamptz IS NULL THEN NULL
		                                            ELSE coalesce(archived_at, $5) END
		WHERE tenant_id = $1 AND project_id = $2 AND plan_id = $3 AND plan_version = $4
		RETURNING `+columns, k.TenantID, k.ProjectID, k.PlanID, k.PlanVersion, at), "set archived")
}

// versionsOfPlan returns the versions of k's plan (k.PlanVersion is not
// read), newest first, without their plans.
func versionsOfPlan(ctx context.Context, q querier, k Key) ([]record, error) {
	rows, err := q.Query(ctx, `SELECT `+summaryColumns+` FROM plan_versions
		WHERE tenant_id = $1 AND project_id = $2 AND plan_id = $3 ORDER BY seq DESC`,
		k.TenantID, k.ProjectID, k.PlanID)
	if err != nil {
		return nil, fmt.Errorf("registry: versions: %w", err)
	}
	return collect(rows)
}

// versionList returns up to limit versions of tenant, of project unless
// it is empty, pushed before the version of seq before (0 for the
// newest), newest first, without their plans.
func versionList(ctx context.Context, q querier, tenant, project string, before int64, limit int) ([]record, error) {
	rows, err := q.Query(ctx, `SELECT `+summaryColumns+` FROM plan_versions
		WHERE tenant_id = $1 AND ($2 = '' OR project_id = $2) AND ($3 = 0 OR seq < $3)
		ORDER BY seq DESC LIMIT $4`, tenant, project, before, limit)
	if err != nil {
		return nil, fmt.Errorf("registry: list: %w", err)
	}
	return collect(rows)
}

// collect reads rows of summaryColumns.
func collect(rows pgx.Rows) ([]record, error) {
	defer rows.Close()
	out := []record{}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("registry: list: %w", err)
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}

// versionsOf is the versions of rs.
func versionsOf(rs []record) []api.PlanVersion {
	out := make([]api.PlanVersion, len(rs))
	for i, r := range rs {
		out[i] = r.PlanVersion
	}
	return out
}
