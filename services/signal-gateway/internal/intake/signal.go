package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/internal/auth"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// Signal is a signal to send to a run.
type Signal struct {
	RunID string
	Name  string
	// ID is the caller's signalId. Nil means the caller sent none: a fresh
	// id is generated and the request is not idempotent across retries.
	// A non-nil empty ID is refused.
	ID      *string
	Payload json.RawMessage
}

// SignalResult is an accepted signal: the canonical result, and whether it
// is the answer to an earlier request with the same (run, name, id).
type SignalResult struct {
	api.AcceptedSignalResult
	Duplicate bool
}

// SignalSend accepts sig for principal p, or refuses it with an *Error.
//
// Acceptance is one transaction, under the run's head lock: it reads the
// acceptance record of (run, name, id) and, if there is one, answers with
// it and writes nothing. Otherwise it checks the run's rate limit, appends
// the SignalAccepted event (the payload, keyed by the storage key), its
// outbox row and the acceptance record, and commits them together. So two
// simultaneous identical requests enqueue once, and a payload without its
// record can only be left by hand or by a crash of a store without
// transactions; finding one, SignalSend answers
// CodeSignalAcceptanceIndeterminate and writes nothing (tier0 contract,
// crash-window table). A signal p may not send is recorded as
// SignalRejected and refused with CodePermissionDenied.
func (in *Intake) SignalSend(ctx context.Context, p auth.Principal, sig Signal) (SignalResult, error) {
	if err := in.checkSignal(sig); err != nil {
		return SignalResult{}, err
	}
	now := in.now()
	tx, err := in.pool.Begin(ctx)
	if err != nil {
		return SignalResult{}, fmt.Errorf("intake: begin: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it is a no-op
	res, commit, err := in.signalTx(ctx, tx, p, sig, now)
	if commit {
		if cerr := tx.Commit(ctx); cerr != nil {
			return SignalResult{}, fmt.Errorf("intake: commit: %w", cerr)
		}
	}
	return res, err
}

// checkSignal refuses what can be refused before touching the database.
func (in *Intake) checkSignal(sig Signal) error {
	if _, err := events.ParseRunID(sig.RunID); err != nil {
		return invalid("workflowId", "must be a run id (a UUID in canonical, lowercase form), not %q", sig.RunID)
	}
	if err := plan.CheckID(sig.Name, api.MaxSignalNameBytes); err != nil {
		return invalid("signalName", "%v", err)
	}
	if sig.ID != nil {
		switch id := *sig.ID; {
		case id == "":
			return invalid("signalId", "must not be empty; leave it out to have one generated")
		case len(id) > api.MaxSignalIDBytes:
			return invalid("signalId", "is %d UTF-8 bytes, more than the limit of %d", len(id), api.MaxSignalIDBytes)
		case containsNUL(id):
			return invalid("signalId", "must not contain U+0000")
		}
	}
	if n := len(sig.Payload); n > in.cfg.MaxSignalPayloadBytes {
		return &Error{Code: api.CodePayloadTooLarge,
			Message: fmt.Sprintf("payload is %d bytes, more than the limit of %d", n, in.cfg.MaxSignalPayloadBytes),
			Details: map[string]any{"field": "payload", "limit": in.cfg.MaxSignalPayloadBytes}}
	}
	if hasNULEscape(sig.Payload) {
		return invalid("payload", `must not contain the escape \u0000 (Postgres jsonb cannot hold it)`)
	}
	return nil
}

// signalTx does SignalSend's work in tx. commit says whether tx holds
// writes to commit: the acceptance, or a SignalRejected with its refusal.
func (in *Intake) signalTx(ctx context.Context, tx pgx.Tx, p auth.Principal, sig Signal, now time.Time) (SignalResult, bool, error) {
	run, err := lockRun(ctx, tx, sig.RunID)
	if err != nil || run.tenant != p.TenantID {
		return SignalResult{}, false, cmpErr(err, notFound(sig.RunID))
	}
	var id string
	if sig.ID != nil {
		id = *sig.ID
	} else {
		id = events.NewRunID() // a fresh UUIDv7
	}
	d := in.authz.Authorize(ctx, p, auth.ActionSignalSend, auth.Resource{TenantID: run.tenant, RunID: sig.RunID, SignalName: sig.Name})
	if !d.Allowed {
		return SignalResult{}, true, in.rejectTx(ctx, tx, run, sig, id, d.Reason, now)
	}
	st, err := in.readSignalState(ctx, tx, sig.RunID, sig.Name, id, now)
	if err != nil {
		return SignalResult{}, false, err
	}
	if st.existing != nil {
		return SignalResult{AcceptedSignalResult: *st.existing, Duplicate: true}, false, nil
	}
	if st.recent >= in.cfg.MaxSignalsPerRunMinute {
		return SignalResult{}, false, in.rateLimited(sig.RunID, st.oldest.Add(RateWindow).Sub(now))
	}
	gen := 1
	if st.lastKey != "" {
		expires := st.lastExpires
		if expires.IsZero() { // accepted before payloads carried their expiry
			expires = st.lastAt.Add(in.cfg.SignalRetention)
		}
		if expires.After(now) {
			return SignalResult{}, false, indeterminate(sig, id)
		}
		gen = keyGeneration(st.lastKey) + 1
	}
	res := api.AcceptedSignalResult{Accepted: true, WorkflowID: sig.RunID, SignalName: sig.Name, SignalID: id,
		AcceptedAt: now, SignalStorageKey: signalStorageKey(sig.RunID, sig.Name, id, gen)}
	if err := in.acceptTx(ctx, tx, run, sig, res); err != nil {
		return SignalResult{}, false, err
	}
	return SignalResult{AcceptedSignalResult: res}, true, nil
}

// cmpErr returns err when it is set and fallback otherwise.
func cmpErr(err error, fallback *Error) error {
	if err != nil {
		return err
	}
	return fallback
}

func (in *Intake) rateLimited(runID string, wait time.Duration) *Error {
	wait = max(wait, time.Second)
	return &Error{Code: api.CodeRateLimited, RetryAfter: wait,
		Message: fmt.Sprintf("run %s accepted %d signals in the last %v, its limit", runID, in.cfg.MaxSignalsPerRunMinute, RateWindow),
		Details: map[string]any{"runId": runID, "limit": in.cfg.MaxSignalsPerRunMinute, "retryAfter": retryAfterSeconds(wait)}}
}

// indeterminate is the fault for a payload found without its acceptance
// record. It names the signal and a fresh correlation id, never the
// payload.
func indeterminate(sig Signal, id string) *Error {
	return &Error{Code: api.CodeSignalAcceptanceIndeterminate,
		Message: "the signal's payload is in the run's log without its acceptance record, so whether this request repeats an accepted one cannot be told; retry only after an operator has inspected it or its retention has passed",
		Details: map[string]any{"workflowId": sig.RunID, "signalName": sig.Name, "signalId": id,
			"correlationId": events.NewRunID()}}
}

// acceptTx appends the SignalAccepted event and records the acceptance.
func (in *Intake) acceptTx(ctx context.Context, tx pgx.Tx, run runInfo, sig Signal, res api.AcceptedSignalResult) error {
	ev, err := events.New(events.Spec{RunID: sig.RunID, Type: events.SignalAccepted, LogicalAttemptID: res.SignalStorageKey,
		PlanVersion: run.planVersion, EmittedAt: res.AcceptedAt,
		Data: events.SignalAcceptedData{SignalName: sig.Name, SignalID: res.SignalID, Payload: sig.Payload,
			ExpiresAt: res.AcceptedAt.Add(in.cfg.SignalRetention)}})
	if err != nil {
		return fmt.Errorf("intake: SignalAccepted: %w", err)
	}
	appended, err := in.journal.AppendTx(ctx, tx, &run.head, ev)
	if err != nil {
		return fmt.Errorf("intake: append SignalAccepted: %w", err)
	}
	if !appended[0].Persisted { // the key was checked under the run lock
		return errors.New("intake: SignalAccepted already in the log under a fresh storage key")
	}
	response, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("intake: encode result: %w", err)
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO signal_acceptances (run_id, signal_name, signal_id, version, storage_key, response, accepted_at, expires_at)
		VALUES ($1, $2, $3, 1, $4, $5, $6, $7)
		ON CONFLICT (run_id, signal_name, signal_id) DO UPDATE
		SET version = 1, storage_key = EXCLUDED.storage_key, response = EXCLUDED.response,
		    accepted_at = EXCLUDED.accepted_at, expires_at = EXCLUDED.expires_at`,
		sig.RunID, sig.Name, res.SignalID, res.SignalStorageKey, response, res.AcceptedAt, res.AcceptedAt.Add(in.cfg.SignalRetention))
	if err != nil {
		return fmt.Errorf("intake: record acceptance: %w", err)
	}
	return nil
}

// rejectTx records a denied signal as SignalRejected with reason and
// returns the refusal. The event's key is derived from the signal, so a
// retried denial is recorded once.
func (in *Intake) rejectTx(ctx context.Context, tx pgx.Tx, run runInfo, sig Signal, id, reason string, now time.Time) error {
	ev, err := events.New(events.Spec{RunID: sig.RunID, Type: events.SignalRejected,
		LogicalAttemptID: "rejected:" + signalKeyPrefix(sig.RunID, sig.Name, id), PlanVersion: run.planVersion,
		EmittedAt: now, Data: events.SignalRejectedData{SignalName: sig.Name, SignalID: id, Reason: reason}})
	if err != nil {
		return fmt.Errorf("intake: SignalRejected: %w", err)
	}
	if _, err := in.journal.AppendTx(ctx, tx, &run.head, ev); err != nil {
		return fmt.Errorf("intake: append SignalRejected: %w", err)
	}
	return &Error{Code: api.CodePermissionDenied, Message: reason,
		Details: map[string]any{"workflowId": sig.RunID, "signalName": sig.Name, "signalId": id}}
}
