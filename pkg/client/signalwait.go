package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
)

// Codes of the gateway's refusals of a signal that could have no effect on
// its run, and of a start that reused its request id (pkg/api documents
// them, with the others).
const (
	// CodeRunTerminal: the run has ended (details.status is COMPLETED,
	// FAILED or CANCELLED) and takes no more signals, but RETRY_STEP on a
	// FAILED run. HTTP 409. Nothing was written; not retried.
	CodeRunTerminal = api.CodeRunTerminal
	// CodeUnknownSignal: the name is neither a control signal nor one a
	// waitSignal step of the run's plan waits for; details.accepts lists
	// the names the run takes. HTTP 400. Nothing was written.
	CodeUnknownSignal = api.CodeUnknownSignal
	// CodeIdempotencyConflict: a start (or trigger event) repeated a
	// runRequestId (eventId) with another plan or input; details.runId
	// names the run the first one started. HTTP 409. Nothing was written.
	CodeIdempotencyConflict = api.CodeIdempotencyConflict
)

// Sentinels of those refusals. An *Error of code CodeRunTerminal is
// ErrRunTerminal (errors.Is), one of CodeUnknownSignal ErrUnknownSignal,
// one of CodeIdempotencyConflict ErrIdempotencyConflict.
var (
	ErrRunTerminal   = errors.New("client: the run has ended")
	ErrUnknownSignal = errors.New("client: the run has no use for a signal of that name")
	// ErrIdempotencyConflict is an *Error of CodeIdempotencyConflict.
	ErrIdempotencyConflict = errors.New("client: the request id was used before with another body")
)

// Is reports whether e is target: ErrRunTerminal or ErrUnknownSignal for
// an *Error of their code.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrRunTerminal:
		return e.Code == CodeRunTerminal
	case ErrUnknownSignal:
		return e.Code == CodeUnknownSignal
	case ErrIdempotencyConflict:
		return e.Code == CodeIdempotencyConflict
	}
	return false
}

// Accepts returns, for an *Error of code CodeUnknownSignal, the signal
// names the run takes (details.accepts); nil for any other.
func (e *Error) Accepts() []string {
	list, _ := e.Details["accepts"].([]any)
	var names []string
	for _, v := range list {
		if s, ok := v.(string); ok {
			names = append(names, s)
		}
	}
	return names
}

// SignalIgnoredError is WaitSignal's error for a signal the engine
// accepted and then ignored: it made no sense in the run's state (PAUSE of
// a run that is not RUNNING, RETRY_STEP of a step that is not FAILED, a
// signal for a waitSignal step that no longer waits, …).
type SignalIgnoredError struct {
	RunID      string
	SignalName string
	SignalID   string
	// Code names the reason (events.SignalCode… constants); Reason says
	// it for people.
	Code   string
	Reason string
}

// Error returns "client: signal NAME to run RUN was ignored (CODE): REASON".
func (e *SignalIgnoredError) Error() string {
	return fmt.Sprintf("client: signal %s to run %s was ignored (%s): %s", e.SignalName, e.RunID, e.Code, e.Reason)
}

// WaitSignal waits for the engine's verdict on the signal res accepted:
// the SignalApplied event that follows, in the run's log, the signal's
// SignalAccepted (the event whose logicalAttemptId is
// res.SignalStorageKey). It reads the log through the read API
// (RunEvents), from the start, and long-polls the run's view (WaitRun) for
// events it has not read yet, so it may wait as long as ctx allows.
//
// It returns the verdict: applied or buffered with a nil error, and
// ignored with a *SignalIgnoredError as well. When ctx ends it returns an
// error wrapping ctx.Err(); a Client without WithReadURL fails with
// ErrNoReadURL.
func (c *Client) WaitSignal(ctx context.Context, res *api.AcceptedSignalResult) (*events.SignalAppliedData, error) {
	if res == nil || !validRunID(res.WorkflowID) || res.SignalStorageKey == "" {
		return nil, fmt.Errorf("%w: WaitSignal needs an accepted signal's result", ErrInvalidRequest)
	}
	var after int64
	accepted := false
	for {
		page, err := c.RunEvents(ctx, res.WorkflowID, after, 1000)
		if err != nil {
			return nil, err
		}
		for _, ev := range page.Events {
			if !accepted {
				accepted = ev.EventType == events.SignalAccepted && ev.LogicalAttemptID == res.SignalStorageKey
				continue
			}
			if v, ok, err := verdictOf(ev, res); ok || err != nil {
				return v, err
			}
		}
		after = page.NextAfterSeq
		if page.More {
			continue
		}
		if _, err := c.WaitRun(ctx, res.WorkflowID, after); err != nil {
			return nil, fmt.Errorf("client: wait for the verdict on signal %s: %w", res.SignalID, err)
		}
	}
}

// verdictOf returns the verdict ev holds when it is the SignalApplied of
// the signal res accepted, with a *SignalIgnoredError when it was ignored.
func verdictOf(ev events.Event, res *api.AcceptedSignalResult) (*events.SignalAppliedData, bool, error) {
	if ev.EventType != events.SignalApplied {
		return nil, false, nil
	}
	var v events.SignalAppliedData
	if err := ev.Data(&v); err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrUnexpectedResponse, err)
	}
	if v.SignalID != res.SignalID || v.SignalName != res.SignalName {
		return nil, false, nil
	}
	if v.Outcome == events.SignalOutcomeIgnored {
		return &v, true, &SignalIgnoredError{RunID: res.WorkflowID, SignalName: v.SignalName, SignalID: v.SignalID,
			Code: v.Code, Reason: v.Reason}
	}
	return &v, true, nil
}
