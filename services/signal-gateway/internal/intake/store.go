package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/api"
)

// runInfo is what intake needs of a run: its head, locked, and the owner
// and plan version its RunApproved names.
type runInfo struct {
	head        int64
	tenant      string
	planVersion string
}

// lockRun locks runID's head row until tx ends, so every acceptance of
// the run is decided in turn (engine rounds append under the same lock),
// and reads its owner. A missing run reads as a runInfo with no tenant,
// which matches no principal.
func lockRun(ctx context.Context, tx pgx.Tx, runID string) (runInfo, error) {
	var r runInfo
	var tenant, version *string
	err := tx.QueryRow(ctx, `
		SELECT h.head_seq, e.event_data->>'tenantId', e.event_data->>'planVersion'
		FROM run_heads h
		JOIN run_events e ON e.run_id = h.run_id AND e.run_seq = 1 AND e.event_type = 'RunApproved'
		WHERE h.run_id = $1
		FOR UPDATE OF h`, runID).Scan(&r.head, &tenant, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		return runInfo{}, nil
	}
	if err != nil {
		return runInfo{}, fmt.Errorf("intake: lock run: %w", err)
	}
	if tenant == nil {
		return runInfo{}, nil // RunApproved of a run started outside the gateway without a tenant
	}
	r.tenant = *tenant
	if version != nil {
		r.planVersion = *version
	}
	return r, nil
}

// signalState is what the run's records say about one signal.
type signalState struct {
	existing *api.AcceptedSignalResult // the unexpired record of (run, name, id)
	recent   int                       // the run's acceptances within RateWindow
	oldest   time.Time                 // the oldest of those
	lastKey  string                    // the storage key of the signal's last payload in the log
	lastAt   time.Time                 // and its emittedAt (its acceptedAt)
	// lastExpires is that payload's expiresAt; zero in payloads written
	// before the field existed.
	lastExpires time.Time
}

// readSignalState reads a signal's state in one round trip. It must run
// after lockRun, so it sees every acceptance committed before this one.
func (in *Intake) readSignalState(ctx context.Context, tx pgx.Tx, runID, name, id string, now time.Time) (signalState, error) {
	prefix := signalKeyPrefix(runID, name, id)
	upper := prefix[:len(prefix)-1] + ";" // ':' + 1: the end of the prefix's range
	var st signalState
	var response []byte
	var oldest, lastAt, lastExpires *time.Time
	var lastKey *string
	err := tx.QueryRow(ctx, `
		SELECT r.response, c.n, c.oldest, p.logical_attempt_id, p.emitted_at, p.expires_at
		FROM (SELECT count(*) AS n, min(accepted_at) AS oldest FROM signal_acceptances
		      WHERE run_id = $1 AND accepted_at > $5) c
		LEFT JOIN LATERAL (SELECT response FROM signal_acceptances
		      WHERE run_id = $1 AND signal_name = $2 AND signal_id = $3 AND expires_at > $4) r ON true
		LEFT JOIN LATERAL (SELECT logical_attempt_id, emitted_at,
		                          (event_data->>'expiresAt')::timestamptz AS expires_at FROM run_events
		      WHERE run_id = $1 AND event_type = 'SignalAccepted'
		        AND logical_attempt_id COLLATE "C" >= $6 AND logical_attempt_id COLLATE "C" < $7
		      ORDER BY run_seq DESC LIMIT 1) p ON true`,
		runID, name, id, now, now.Add(-RateWindow), prefix, upper).Scan(&response, &st.recent, &oldest, &lastKey, &lastAt, &lastExpires)
	if err != nil {
		return signalState{}, fmt.Errorf("intake: read signal state: %w", err)
	}
	if response != nil {
		st.existing = new(api.AcceptedSignalResult)
		if err := json.Unmarshal(response, st.existing); err != nil {
			return signalState{}, fmt.Errorf("intake: decode acceptance record: %w", err)
		}
	}
	if oldest != nil {
		st.oldest = *oldest
	}
	if lastKey != nil && lastAt != nil {
		st.lastKey, st.lastAt = *lastKey, *lastAt
	}
	if lastExpires != nil {
		st.lastExpires = *lastExpires
	}
	return st, nil
}

// now is the clock, in UTC and at Postgres's microsecond precision, so a
// time read back from a record equals the one first answered.
func (in *Intake) now() time.Time { return in.cfg.Now().UTC().Truncate(time.Microsecond) }

func containsNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

// hasNULEscape reports whether JSON text holds the escape \u0000, which
// jsonb refuses. Outside strings valid JSON has no backslash, and inside
// one every backslash starts an escape, so a linear scan is exact.
func hasNULEscape(doc []byte) bool {
	for i := 0; i < len(doc); i++ {
		if doc[i] != '\\' {
			continue
		}
		if i+5 < len(doc) && doc[i+1] == 'u' && string(doc[i+2:i+6]) == "0000" {
			return true
		}
		i++ // skip the escaped character
	}
	return false
}
