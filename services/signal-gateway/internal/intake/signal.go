package intake

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/weftrun/weft/internal/policy/auth"
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
	// RunField is the name the request gave the run id, which its
	// problems use: "workflowId" (the tier-0 contract's) when empty.
	RunField string
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
//
// Signals sent at the same time to different runs may share that
// transaction (grouper), each decided under its own run's lock as if
// alone; it answers none of them before it has committed. SignalSend
// returns when sig is answered. Safe for concurrent use.
func (in *Intake) SignalSend(ctx context.Context, p auth.Principal, sig Signal) (SignalResult, error) {
	stepID, err := in.checkSignal(sig)
	if err != nil {
		return SignalResult{}, err
	}
	c := newCall(ctx, p, sig, stepID, in.now())
	in.groups.send(c)
	return c.res, c.err
}

// checkSignal refuses what can be refused before touching the database,
// and returns the step a RETRY_STEP names ("" for any other signal). The
// payload of a control signal may hold only the fields its signal takes
// (retryStepTarget, checkNoPayload): the engine would drop any other.
func (in *Intake) checkSignal(sig Signal) (string, error) {
	if err := in.checkSignalFields(sig); err != nil {
		return "", err
	}
	switch sig.Name {
	case plan.SignalRetryStep:
		return retryStepTarget(sig.Payload)
	case plan.SignalPause, plan.SignalResume, plan.SignalCancel:
		return "", checkNoPayload(sig.Name, sig.Payload)
	}
	return "", nil
}

// checkSignalFields checks the run id, name, id and payload of sig: a
// payload over its limit is refused on its own, as CodePayloadTooLarge;
// otherwise every field is checked before a refusal, which lists the
// problems of all (signalProblems).
func (in *Intake) checkSignalFields(sig Signal) error {
	if n := len(sig.Payload); n > in.cfg.MaxSignalPayloadBytes {
		return &Error{Code: api.CodePayloadTooLarge,
			Message: fmt.Sprintf("payload is %d bytes, more than the limit of %d", n, in.cfg.MaxSignalPayloadBytes),
			Details: map[string]any{"field": "payload", "limit": in.cfg.MaxSignalPayloadBytes}}
	}
	if ps := signalProblems(sig); len(ps) > 0 {
		return Problems(ps)
	}
	return nil
}

// call is one signal on its way through acceptance: the request, what
// was read of its run under the run's lock, and the answer.
type call struct {
	// waiter holds the caller's context and, as the grouper's, the
	// answer's err: a refusal (*Error) or a fault.
	waiter
	p   auth.Principal
	sig Signal
	id  string // sig.ID, or the id generated for it
	// stepID is the step a RETRY_STEP names; "" for any other signal.
	stepID string
	now    time.Time
	// trace is the request's trace context, for the bus copy of its event.
	trace trace.SpanContext

	run runInfo
	st  signalState
	// ev is the event the decision appends: SignalAccepted, or
	// SignalRejected, whose refusal is then err.
	ev *events.Event
	// The answer: res, or err (waiter).
	res SignalResult
}

func (c *call) waiting() *waiter { return &c.waiter }
func (c *call) groupKey() string { return c.sig.RunID }

func newCall(ctx context.Context, p auth.Principal, sig Signal, stepID string, now time.Time) *call {
	c := &call{waiter: waiter{ctx: ctx}, p: p, sig: sig, stepID: stepID, now: now, trace: trace.SpanContextFromContext(ctx)}
	if sig.ID != nil {
		c.id = *sig.ID
	} else {
		c.id = events.NewRunID() // a fresh UUIDv7
	}
	return c
}

// reset forgets what was read and decided, for a new transaction.
func (c *call) reset() {
	c.run, c.st, c.ev, c.res, c.err = runInfo{}, signalState{}, nil, SignalResult{}, nil
}

// fail answers c with err, a fault, when there is one.
func (c *call) fail(err error) {
	if err != nil {
		c.res, c.err, c.ev = SignalResult{}, err, nil
	}
}

// decide answers c from its run and signal state, read under the run's
// lock, checking in the documented order (docs/api.md): the run is the
// principal's tenant's, the principal may send the signal, the signal is
// not a repeat, the signal can have an effect on the run (checkEffect),
// the run is within its rate limit, and no payload of the signal is in
// the log without its record. It sets c.res or c.err, and c.ev when there
// is an event to append. An error is a fault.
func (in *Intake) decide(c *call) error {
	run, st := c.run, c.st
	if !run.locked || run.tenant != c.p.TenantID {
		c.err = notFound(c.sig.RunID)
		return nil
	}
	d := in.authz.Authorize(c.ctx, c.p, auth.ActionSignalSend, auth.Resource{TenantID: run.tenant, RunID: c.sig.RunID, SignalName: c.sig.Name})
	switch {
	case !d.Allowed:
		return in.deny(c, d.Reason)
	case st.existing != nil:
		c.res = SignalResult{AcceptedSignalResult: *st.existing, Duplicate: true}
		return nil
	}
	if e, refused := checkEffect(c.sig, c.stepID, run); refused {
		c.err = e // refused: no event to append
		return nil
	}
	if st.recent >= in.cfg.MaxSignalsPerRunMinute {
		c.err = in.rateLimited(c.sig.RunID, st.oldest.Add(RateWindow).Sub(c.now))
		return nil
	}
	gen, ok := in.generation(st, c.now)
	if !ok {
		c.err = indeterminate(c.sig, c.id)
		return nil
	}
	return in.accept(c, gen)
}

// accept decides to accept c as the gen-th acceptance of its signal.
func (in *Intake) accept(c *call, gen int) error {
	res := api.AcceptedSignalResult{Accepted: true, WorkflowID: c.sig.RunID, SignalName: c.sig.Name, SignalID: c.id,
		AcceptedAt: c.now, SignalStorageKey: signalStorageKey(c.sig.RunID, c.sig.Name, c.id, gen)}
	ev, err := events.New(events.Spec{RunID: c.sig.RunID, Type: events.SignalAccepted, LogicalAttemptID: res.SignalStorageKey,
		PlanVersion: c.run.planVersion, EmittedAt: res.AcceptedAt,
		Data: events.SignalAcceptedData{SignalName: c.sig.Name, SignalID: c.id, Payload: c.sig.Payload, ExpiresAt: in.expiry(res.AcceptedAt)}})
	if err != nil {
		return fmt.Errorf("intake: SignalAccepted: %w", err)
	}
	c.res, c.ev = SignalResult{AcceptedSignalResult: res}, &ev
	return nil
}

// deny decides the refusal of c, a signal its principal may not send.
// The denial counts against the run's rate limit: past it (the run's
// acceptances in the last RateWindow and this gateway's denials in the
// current one), c is refused with CodeRateLimited and nothing is
// recorded. Otherwise it is refused with CodePermissionDenied and
// recorded as SignalRejected (reject).
func (in *Intake) deny(c *call, reason string) error {
	n, end := in.denials.add(c.sig.RunID, c.now)
	if c.st.recent+n > in.cfg.MaxSignalsPerRunMinute {
		e := in.rateLimited(c.sig.RunID, end.Sub(c.now))
		e.Message = fmt.Sprintf("run %s took %d signals in its rate window, its limit (denied signals count)",
			c.sig.RunID, in.cfg.MaxSignalsPerRunMinute)
		e.Denial = DenialRateLimited
		c.err = e
		return nil
	}
	return in.reject(c, reason)
}

// reject decides to record c as SignalRejected with reason and to refuse
// it. The event's key is that of the principal's key, the run and the
// SignalRejectedWindow of now (rejectedKey), so the log holds one per
// key, run and window however many denials there are; appendTx marks the
// refusal DenialUnrecorded when the log had it already.
func (in *Intake) reject(c *call, reason string) error {
	ev, err := events.New(events.Spec{RunID: c.sig.RunID, Type: events.SignalRejected,
		LogicalAttemptID: rejectedKey(c.sig.RunID, c.p.KeyID, c.now, in.cfg.SignalRejectedWindow), PlanVersion: c.run.planVersion,
		EmittedAt: c.now, Data: events.SignalRejectedData{SignalName: c.sig.Name, SignalID: c.id, Reason: reason}})
	if err != nil {
		return fmt.Errorf("intake: SignalRejected: %w", err)
	}
	c.ev = &ev
	c.err = &Error{Code: api.CodePermissionDenied, Message: reason, Denial: DenialRecorded,
		Details: map[string]any{"workflowId": c.sig.RunID, "signalName": c.sig.Name, "signalId": c.id}}
	return nil
}

// expiry is when an acceptance at t stops answering repeats.
func (in *Intake) expiry(t time.Time) time.Time { return t.Add(in.cfg.SignalRetention) }

// generation returns the generation of a new acceptance of the signal
// whose state is st: 1, or one more than its last payload's once that
// has expired. It returns false for an unexpired payload, which is one
// without its acceptance record (the record would have answered).
func (in *Intake) generation(st signalState, now time.Time) (int, bool) {
	if st.lastKey == "" {
		return 1, true
	}
	expires := st.lastExpires
	if expires.IsZero() { // accepted before payloads carried their expiry
		expires = st.lastAt.Add(in.cfg.SignalRetention)
	}
	if expires.After(now) {
		return 0, false
	}
	return keyGeneration(st.lastKey) + 1, true
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
