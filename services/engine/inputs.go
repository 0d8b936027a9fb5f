package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine/internal/decide"
	"github.com/weftrun/weft/services/engine/internal/round"
)

// eventRound maps an event from WEFT_EVENTS to its round: RunApproved
// starts the run, SignalAccepted applies the signal, ChildRunEnded ends a
// subPlan step (streams.EngineInput); every other event needs nothing. The
// server delivers the engine those three alone (EventInputsFilter), but for the events an older build stored
// (partitions.go, olderForms); the type is read from the header first, so
// the engine decodes only the events it reacts to.
func eventRound(m jetstream.Msg) (round.Round, bool, error) {
	typ := events.Type(m.Headers().Get(streams.HeaderEventType))
	if !streams.EngineInput(typ) {
		return round.Round{}, false, nil
	}
	now := time.Now().UTC()
	if typ == events.RunApproved {
		// The subject names the run; the payload, which holds the plan (up
		// to MaxPlanBytes), is not read: the round loads the run's log.
		runID, err := streams.RunOfEventSubject(m.Subject())
		if err != nil {
			return round.Round{}, false, err
		}
		return round.Round{RunID: runID, Input: decide.RunApproved{Now: now}}, true, nil
	}
	var ev events.Event
	if err := json.Unmarshal(m.Data(), &ev); err != nil {
		return round.Round{}, false, fmt.Errorf("decode event: %w", err)
	}
	if typ == events.ChildRunEnded {
		return childEndedRound(ev, now)
	}
	var d events.SignalAcceptedData
	if err := ev.Data(&d); err != nil {
		return round.Round{}, false, err
	}
	return round.Round{RunID: ev.RunID, Input: decide.SignalAccepted{
		SignalID: d.SignalID, Name: d.SignalName, Payload: d.Payload, EventID: ev.EventID, Now: now,
	}}, true, nil
}

// childEndedRound is the round of a ChildRunEnded in a parent's log: the
// end of the subPlan attempt its step and logical attempt name.
func childEndedRound(ev events.Event, now time.Time) (round.Round, bool, error) {
	var d events.ChildRunEndedData
	if err := ev.Data(&d); err != nil {
		return round.Round{}, false, err
	}
	attempt, err := strconv.Atoi(ev.LogicalAttemptID)
	if err != nil || attempt < 1 {
		return round.Round{}, false, fmt.Errorf("ChildRunEnded of run %s step %s: logicalAttemptId %q is not a positive integer",
			ev.RunID, ev.StepID, ev.LogicalAttemptID)
	}
	return round.Round{RunID: ev.RunID, Input: decide.ChildEnded{StepID: ev.StepID, LogicalAttempt: attempt,
		ChildRunEndedData: d, Now: now}}, true, nil
}

// maxErrorMessageBytes bounds the message of a failure the engine records;
// a longer one is cut. Error messages are for people, not for payloads.
const maxErrorMessageBytes = 4 << 10

// CodeResultTooLarge fails an attempt whose reported output and artifacts
// exceed Config.MaxResultBytes: the engine records the failure instead of
// an event the log would refuse.
const CodeResultTooLarge = "RESULT_TOO_LARGE"

// resultRound maps a worker's result to its round. A result without its
// task's token is dropped (acked, no round; tokens.go) before anything of
// it is read further. A completed result too large for the log, or whose
// output jsonb cannot hold, becomes a failure of the attempt, not
// retryable; an escape \u0000 elsewhere in it reads as U+FFFD.
func (s *Service) resultRound(m jetstream.Msg) (round.Round, bool, error) {
	res, err := decodeResult(m.Data())
	if err != nil {
		return round.Round{}, false, err
	}
	// A message has no context before its round (toRoundFunc): the log
	// line and the count of a dropped result need none.
	if s.forgedResult(context.Background(), res) {
		return round.Round{}, false, nil
	}
	if res.Kind == task.Completed {
		if size := resultSize(res); size > s.cfg.MaxResultBytes {
			res.Kind, res.Output, res.Artifacts = task.Failed, nil, nil
			res.Reconcile = completedUnusable(res.Reconcile)
			res.Error = &events.StepError{Code: CodeResultTooLarge, Retryable: false, Category: "WORKER",
				Message: fmt.Sprintf("the result is %d bytes, over the engine's limit of %d; large outputs belong in artifacts",
					size, s.cfg.MaxResultBytes)}
		}
	}
	s.refuseUnfitOutput(&res)
	if res.Error != nil && len(res.Error.Message) > maxErrorMessageBytes {
		e := *res.Error
		e.Message = strings.ToValidUTF8(e.Message[:maxErrorMessageBytes], "") + "…(truncated by the engine)"
		res.Error = &e
	}
	in, err := resultInput(res, time.Now().UTC())
	if err != nil {
		return round.Round{}, false, err
	}
	return round.Round{RunID: res.RunID, Input: in}, true, nil
}

func resultInput(res task.Result, now time.Time) (decide.Input, error) {
	attempt, err := strconv.Atoi(res.LogicalAttemptID)
	if err != nil || attempt < 1 {
		return nil, fmt.Errorf("result of run %s step %s: logicalAttemptId %q is not a positive integer",
			res.RunID, res.StepID, res.LogicalAttemptID)
	}
	switch res.Kind {
	case task.Started:
		var key string
		if res.Reconcile != nil {
			key = res.Reconcile.IdempotencyKey
		}
		return decide.ResultStarted{StepID: res.StepID, LogicalAttempt: attempt,
			EngineAttemptID: res.EngineAttemptID, WorkerID: res.WorkerID, ActivityKey: key, StartedAt: res.StartedAt, Now: now}, nil
	case task.Completed:
		return decide.ResultCompleted{StepID: res.StepID, LogicalAttempt: attempt, EngineAttemptID: res.EngineAttemptID,
			WorkerID: res.WorkerID, Output: res.Output, Artifacts: res.Artifacts, Reconcile: res.Reconcile,
			StartedAt: res.StartedAt, Now: now}, nil
	case task.Failed:
		if res.Error == nil {
			return nil, fmt.Errorf("result of run %s step %s: StepFailed without an error", res.RunID, res.StepID)
		}
		return decide.ResultFailed{StepID: res.StepID, LogicalAttempt: attempt, EngineAttemptID: res.EngineAttemptID,
			WorkerID: res.WorkerID, Error: *res.Error, Jitter: rand.Float64(), Reconcile: res.Reconcile,
			StartedAt: res.StartedAt, Now: now}, nil
	}
	return nil, fmt.Errorf("result of run %s step %s: unknown kind %q", res.RunID, res.StepID, res.Kind)
}

// resultSize is the bytes a completed result adds to its event's data.
func resultSize(res task.Result) int {
	n := len(res.Output)
	if len(res.Artifacts) > 0 {
		b, _ := json.Marshal(res.Artifacts)
		n += len(b)
	}
	return n
}

// completedUnusable is the reconciliation report of a completed result the
// engine turned into a failure: the side effect completed, and its result
// is not usable, so a redelivery must not run the activity again.
func completedUnusable(rep *task.ResultReconcile) *task.ResultReconcile {
	if rep == nil {
		return nil
	}
	c := *rep
	c.Status = task.StatusCompleted
	return &c
}
