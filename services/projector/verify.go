package projector

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/pkg/events"
)

// The bus is a transport, never a source of truth: whoever can publish on
// weft.events.> could otherwise rewrite what readers see. So every bus event
// past its run's watermark is checked against the log before it is applied:
// the log must hold an event at that runSeq with the same event id,
// idempotency key and type. The check is one more statement in the batch
// that locks the runs' rows (rowsLock), not a round trip of its own. An
// event that fails it is forged: it is never applied, its message is
// terminated, and it raises AlertForged. Since the outbox commits with the
// log, a true event is always in the log before it is on the bus; an event
// past the log's head is forged too, and opens no gap.

// AlertForged is raised, per run, when a bus message does not match the
// run's log; it clears ForgedAlertFor after the last one.
const AlertForged = "PROJECTOR_FORGED_EVENT"

// Reasons a bus event is forged, the reason label of
// weft.projector.events.forged.
const (
	forgedNoRun     = "no_run"    // the log has no such run
	forgedNoEvent   = "no_event"  // the log has no event at that runSeq
	forgedDifferent = "different" // the log's event there has another id, key or type
)

// logKey is one event's place in the log.
type logKey struct {
	runID string
	seq   int64
}

// logIdentity is what the log holds at a logKey; empty when it holds
// nothing there.
type logIdentity struct {
	eventID, key, typ string
}

// matches reports whether the log's event is e.
func (l logIdentity) matches(e events.Event) bool {
	return l.eventID != "" && l.eventID == e.EventID && l.key == e.IdempotencyKey && l.typ == string(e.EventType)
}

// forgedEvent is a bus event the log refutes.
type forgedEvent struct {
	fingerprint
	reason string
}

// fingerprint tells a bus message's event apart from another at the same
// runSeq.
type fingerprint struct {
	seq               int64
	eventID, key, typ string
}

func fingerprintOf(e events.Event) fingerprint {
	return fingerprint{seq: e.RunSeq, eventID: e.EventID, key: e.IdempotencyKey, typ: string(e.EventType)}
}

// busCheckSQL returns, for each (run, runSeq) of the bus past the run's
// watermark, the log's event there (empty strings when there is none),
// through run_events' primary key. It runs after rowsLockSQL in the same
// batch, so it sees the placeholders that batch created and the
// watermarks it locked (a run without a row yet is checked by
// freshCheckSQL instead); an event at or below a watermark is a duplicate the reducer
// skips, and is not looked up.
const busCheckSQL = `
SELECT b.run_id::text, b.run_seq, coalesce(e.event_id::text, ''), coalesce(e.idempotency_key, ''),
       coalesce(e.event_type, '')
FROM unnest($1::uuid[], $2::bigint[]) AS b(run_id, run_seq)
JOIN run_snapshots s ON s.run_id = b.run_id AND b.run_seq > s.last_event_seq
LEFT JOIN run_events e ON e.run_id = b.run_id AND e.run_seq = b.run_seq`

// queueBusCheck queues busCheckSQL for the distinct places of byRun's
// events; false when there are none (a resync or a rebuild).
func queueBusCheck(b *pgx.Batch, runIDs []string, byRun map[string][]events.Event) bool {
	ids, seqs := busPlaces(runIDs, byRun)
	if len(ids) == 0 {
		return false
	}
	b.Queue(busCheckSQL, ids, seqs)
	return true
}

// readBusCheck reads busCheckSQL's answer.
func readBusCheck(br pgx.BatchResults) (map[logKey]logIdentity, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("projector: check bus events against the log: %w", err)
	}
	defer rows.Close()
	out := map[logKey]logIdentity{}
	for rows.Next() {
		var k logKey
		var l logIdentity
		if err := rows.Scan(&k.runID, &k.seq, &l.eventID, &l.key, &l.typ); err != nil {
			return nil, fmt.Errorf("projector: read the log's events: %w", err)
		}
		out[k] = l
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("projector: read the log's events: %w", err)
	}
	return out, nil
}

// verifyBus splits bus, the events of runID's run (sorted), into those
// that may apply and those the log refutes. r is the run's locked row, nil
// when the log has no such run. A bus event not looked up is at or below
// the watermark: a duplicate, kept for the reducer to skip. kept is nil
// only when bus is (nil asks project for a resync).
func verifyBus(runID string, r *runRow, bus []events.Event, logged map[logKey]logIdentity) (kept []events.Event, forged []forgedEvent) {
	if bus == nil {
		return nil, nil
	}
	kept = make([]events.Event, 0, len(bus))
	for _, e := range bus {
		l, looked := logged[logKey{runID, e.RunSeq}]
		switch {
		case r == nil:
			forged = append(forged, forgedEvent{fingerprintOf(e), forgedNoRun})
		case !looked || l.matches(e):
			kept = append(kept, e)
		case l.eventID == "":
			forged = append(forged, forgedEvent{fingerprintOf(e), forgedNoEvent})
		default:
			forged = append(forged, forgedEvent{fingerprintOf(e), forgedDifferent})
		}
	}
	return kept, forged
}

// isForged reports whether ev, one message's event, is among the forged
// events of its run's change.
func (ch runChange) isForged(ev events.Event) bool {
	fp := fingerprintOf(ev)
	return slices.ContainsFunc(ch.forged, func(f forgedEvent) bool { return f.fingerprint == fp })
}

// forgedAlertRaiseSQL raises or renews a run's AlertForged: raised_at is
// the last forged message's time, from which it expires.
const forgedAlertRaiseSQL = `
INSERT INTO projector_alerts (alert_key, code, severity, run_id, tenant_id, message)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (alert_key) DO UPDATE SET message = EXCLUDED.message, raised_at = clock_timestamp()`

// forgedAlertsExpireSQL clears the AlertForged rows older than $2.
const forgedAlertsExpireSQL = `DELETE FROM projector_alerts WHERE code = $1 AND raised_at < clock_timestamp() - $2::interval`

// queueForgedAlert queues, in the batch's transaction, the AlertForged row
// of a run whose bus messages the log refuted. A run the log does not have
// gets none (no tenant could read it): its forgeries are logged and counted.
func queueForgedAlert(b *pgx.Batch, r *runRow, ch runChange) {
	if len(ch.forged) == 0 || r == nil {
		return
	}
	last := ch.forged[len(ch.forged)-1]
	msg := fmt.Sprintf("%d bus message(s) that the log refutes were dropped, never applied; the last at runSeq %d (%s): "+
		"something that is not the outbox relay publishes on the run's subject", len(ch.forged), last.seq, forgedReasonText(last.reason))
	b.Queue(forgedAlertRaiseSQL, AlertForged+":"+r.snap.RunID, AlertForged, SeverityP2, r.snap.RunID, r.ident.TenantID, msg)
}

func forgedReasonText(reason string) string {
	switch reason {
	case forgedNoRun:
		return "the log has no such run"
	case forgedNoEvent:
		return "the log has no event at that runSeq"
	default:
		return "the log's event there has another event id, idempotency key or type"
	}
}

// reportForged logs and counts the forged events of one run's batch. The
// values logged are the projector's own (runSeq, reason), never the
// message's strings.
func (s *Service) reportForged(ctx context.Context, runID string, ch runChange) {
	if len(ch.forged) == 0 {
		return
	}
	s.metrics.alerts.Add(ctx, 1, metric.WithAttributes(attribute.String("code", AlertForged)))
	for _, f := range ch.forged {
		s.metrics.forged.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", f.reason)))
		s.logger.WarnContext(ctx, "projector: a bus message the log refutes was dropped, never applied",
			"alert", AlertForged, "severity", SeverityP2, "run_id", runID, "run_seq", f.seq,
			"reason", forgedReasonText(f.reason))
	}
}

// expireForgedAlerts clears the AlertForged rows raised more than
// ForgedAlertFor ago.
func (s *Service) expireForgedAlerts(ctx context.Context) error {
	tag, err := s.pool.Exec(ctx, forgedAlertsExpireSQL, AlertForged, s.cfg.ForgedAlertFor)
	if err != nil {
		return fmt.Errorf("projector: expire %s alerts: %w", AlertForged, err)
	}
	if n := tag.RowsAffected(); n > 0 {
		s.logger.InfoContext(ctx, "projector: forged-event alerts expired",
			"alert", AlertForged, "cleared", true, "alerts", n)
	}
	return nil
}
