package projector

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Alert codes and severities (execution-semantics §1.5).
const (
	// AlertGap is raised, per run, while the run has an open runSeq gap.
	AlertGap = "PROJECTOR_GAP_DETECTED"
	// AlertLagHigh is raised while projection lag exceeds Config.LagAlert.
	AlertLagHigh = "PROJECTOR_LAG_HIGH"

	SeverityP1 = "P1"
	SeverityP2 = "P2"
)

// An alert is three things at once: a log record at its level with an
// "alert" field, a count on the weft.projector.alerts counter, and a row
// of projector_alerts, listed by GET /v1/alerts, while it is active.

const alertRaiseSQL = `
INSERT INTO projector_alerts (alert_key, code, severity, run_id, tenant_id, message)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (alert_key) DO UPDATE SET message = EXCLUDED.message`

const alertClearSQL = `DELETE FROM projector_alerts WHERE alert_key = $1`

func gapAlertKey(runID string) string { return AlertGap + ":" + runID }

// queueGapAlert queues, in the batch's transaction, the row of a gap that
// opened or the removal of one that closed.
func queueGapAlert(b *pgx.Batch, r *runRow, ch runChange) {
	key := gapAlertKey(r.snap.RunID)
	switch {
	case ch.gapOpened:
		b.Queue(alertRaiseSQL, key, AlertGap, SeverityP1, r.snap.RunID, r.ident.TenantID, gapMessage(r.snap.LastEventSeq, r.gapSeen, ch.haltErr))
	case ch.gapClosed:
		b.Queue(alertClearSQL, key)
	}
}

func gapMessage(lastSeq, seen int64, halt error) string {
	if halt != nil {
		return fmt.Sprintf("run halted at runSeq %d: the next event cannot be applied: %v", lastSeq, halt)
	}
	return fmt.Sprintf("runSeq gap: applied up to %d, saw %d; events %d to %d are missing", lastSeq, seen, lastSeq+1, seen-1)
}

// reportRun logs and counts what one run's batch did to its gap alert.
func (s *Service) reportRun(ctx context.Context, runID string, ch runChange) {
	switch {
	case ch.gapOpened:
		s.metrics.alerts.Add(ctx, 1, metric.WithAttributes(attribute.String("code", AlertGap)))
		s.logger.ErrorContext(ctx, "projector: run halted on a runSeq gap; resyncing from the log",
			"alert", AlertGap, "severity", SeverityP1, "run_id", runID,
			"last_event_seq", ch.lastSeq, "seen_seq", ch.gapSeen, "err", ch.haltErr)
	case ch.gapClosed:
		s.logger.InfoContext(ctx, "projector: gap closed; run resumed",
			"alert", AlertGap, "cleared", true, "run_id", runID, "last_event_seq", ch.lastSeq)
	}
}

// lagAlarm raises and clears PROJECTOR_LAG_HIGH from the lag this process
// measures. Its state starts unknown, so the first measurement under the
// threshold removes an alert a crashed process may have left.
type lagAlarm struct {
	mu     sync.Mutex
	known  bool
	active bool
}

// observeLag updates the alert from the highest lag of a batch, which
// includes the read pool's replay lag (afterCommit).
func (s *Service) observeLag(ctx context.Context, worst time.Duration) {
	a := &s.lagAlarm
	a.mu.Lock()
	defer a.mu.Unlock()
	high := worst > s.cfg.LagAlert
	if a.known && a.active == high {
		return
	}
	if err := setLagAlert(ctx, s.pool, high, worst, s.cfg.LagAlert); err != nil {
		s.logger.WarnContext(ctx, "projector: lag alert not stored", "err", err)
		return
	}
	switch {
	case high:
		s.metrics.alerts.Add(ctx, 1, metric.WithAttributes(attribute.String("code", AlertLagHigh)))
		s.logger.WarnContext(ctx, "projector: projection lag is high",
			"alert", AlertLagHigh, "severity", SeverityP2, "lag", worst.String(), "threshold", s.cfg.LagAlert.String(),
			"read_replica_lag", s.replicaLag().String()) // part of lag (Config.ReadPool), 0s without one
	case a.known:
		s.logger.InfoContext(ctx, "projector: projection lag is back to normal",
			"alert", AlertLagHigh, "cleared", true, "lag", worst.String())
	}
	a.known, a.active = true, high
}

func setLagAlert(ctx context.Context, pool *pgxpool.Pool, high bool, worst, threshold time.Duration) error {
	if !high {
		_, err := pool.Exec(ctx, alertClearSQL, AlertLagHigh)
		return err
	}
	msg := fmt.Sprintf("projection lag %s exceeds %s", worst.Round(time.Millisecond), threshold)
	_, err := pool.Exec(ctx, alertRaiseSQL, AlertLagHigh, AlertLagHigh, SeverityP2, nil, "", msg)
	return err
}
