package schedule

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// quotaLockTx takes the transaction-scoped advisory lock of tenant's
// schedule quota: the creates of one tenant count its schedules one after
// the other, each after the last has committed or rolled back.
func quotaLockTx(ctx context.Context, tx pgx.Tx, tenant string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('weft.schedules.quota:' || $1, 0))`, tenant); err != nil {
		return fmt.Errorf("schedule: quota lock: %w", err)
	}
	return nil
}

// quotaCheckTx refuses, with CodeQuotaExceeded, a schedule just inserted
// in tx beyond tenant's quota; the caller rolls tx back. It must run
// under quotaLockTx.
func (s *Service) quotaCheckTx(ctx context.Context, tx pgx.Tx, tenant string) error {
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM schedules WHERE tenant_id = $1`, tenant).Scan(&n); err != nil {
		return fmt.Errorf("schedule: quota count: %w", err)
	}
	if n > s.cfg.MaxPerTenant {
		return intake.QuotaExceeded(intake.LimitScheduleQuota, "schedules", tenant, s.cfg.MaxPerTenant)
	}
	return nil
}
