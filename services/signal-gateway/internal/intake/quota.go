package intake

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Quota is a tenant's quota of one kind of stored resource: at most Max
// rows of Table (a table of the gateway's with a tenant_id column, named
// by the code, never by a caller) per tenant. A create takes LockTx, then
// inserts, then CheckTx, in one transaction, so the creates of one tenant
// count one after the other, on any number of gateways.
type Quota struct {
	// Table holds the resources and names them in refusals: "schedules".
	Table string
	// Limit is the Error.Limit of a refusal (LimitScheduleQuota…).
	Limit string
	// Max is the quota.
	Max int
}

// LockTx takes the transaction-scoped advisory lock of tenant's quota.
func (q Quota) LockTx(ctx context.Context, tx pgx.Tx, tenant string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('weft.'||$1||'.quota:' || $2, 0))`, q.Table, tenant); err != nil {
		return fmt.Errorf("intake: %s quota lock: %w", q.Table, err)
	}
	return nil
}

// CheckTx refuses, with CodeQuotaExceeded, a resource just inserted in tx
// beyond tenant's quota; the caller rolls tx back. It must run under
// LockTx.
func (q Quota) CheckTx(ctx context.Context, tx pgx.Tx, tenant string) error {
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+q.Table+` WHERE tenant_id = $1`, tenant).Scan(&n); err != nil {
		return fmt.Errorf("intake: %s quota count: %w", q.Table, err)
	}
	if n > q.Max {
		return QuotaExceeded(q.Limit, q.Table, tenant, q.Max)
	}
	return nil
}
