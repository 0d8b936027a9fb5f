package engine_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine"
)

// signal appends a SignalAccepted for the run, as the signal gateway does.
func (s *stack) signal(t *testing.T, runID, name, signalID string, payload string) {
	t.Helper()
	ev, err := events.New(events.Spec{
		RunID: runID, Type: events.SignalAccepted, LogicalAttemptID: signalID, PlanVersion: "1",
		Data: events.SignalAcceptedData{SignalName: name, SignalID: signalID, Payload: json.RawMessage(payload)},
	})
	require.NoError(t, err)
	_, err = eventlogtest.Append(t.Context(), journal.New(s.log), s.db.Pool, nil, ev)
	require.NoError(t, err)
}

// waitFor waits until the run's log holds an event of type typ and returns
// the log.
func (s *stack) waitEvent(t *testing.T, runID string, typ events.Type) []events.Event {
	t.Helper()
	var evs []events.Event
	require.Eventually(t, func() bool {
		var err error
		evs, err = s.log.EventsFetchAfter(t.Context(), runID, 0, 0)
		require.NoError(t, err)
		for _, ev := range evs {
			if ev.EventType == typ {
				return true
			}
		}
		return false
	}, waitFor, 10*time.Millisecond, "run %s logs %s; log: %v", runID, typ, lazyTypes{&evs})
	return evs
}

func TestWaitSignalStepCompletesWithPayload(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, parsePlan(t, `{"planId":"gate","planVersion":"1","steps":[
		{"id":"approval","kind":"waitSignal","signal":"approve"},
		{"id":"ship","activity":"echo","dependsOn":["approval"]}]}`))
	s.waitEvent(t, runID, events.RunStarted)
	s.signal(t, runID, "approve", "sig-1", `{"by":"ops"}`)

	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	for _, ev := range evs {
		if ev.EventType == events.StepCompleted && ev.StepID == "approval" {
			var d events.StepCompletedData
			require.NoError(t, ev.Data(&d))
			require.JSONEq(t, `{"by":"ops"}`, string(d.Output))
		}
	}
}

// TestSignalBeforeTheStepWaits sends a waitSignal step's signal while the
// step before it still runs (no worker yet): the signal is kept, and the
// step completes with its payload as soon as it is ready.
func TestSignalBeforeTheStepWaits(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	runID := s.start(t, parsePlan(t, `{"planId":"early","planVersion":"1","steps":[
		{"id":"build","activity":"echo"},
		{"id":"approval","kind":"waitSignal","signal":"approve","dependsOn":["build"]},
		{"id":"ship","activity":"echo","dependsOn":["approval"]}]}`))
	s.waitEvent(t, runID, events.RunStarted)
	s.signal(t, runID, "approve", "sig-early", `{"by":"ops"}`)
	kept := s.waitApplied(t, runID, "sig-early")
	require.Equal(t, events.SignalOutcomeBuffered, kept.Outcome)
	require.Equal(t, []string{"approval"}, kept.StepIDs)

	rawWorker(t, s.js, "default", echo) // build runs only now
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	for _, ev := range evs {
		if ev.EventType == events.StepCompleted && ev.StepID == "approval" {
			var d events.StepCompletedData
			require.NoError(t, ev.Data(&d))
			require.JSONEq(t, `{"by":"ops"}`, string(d.Output))
			require.Equal(t, "sig-early", ev.CausedBySignalID)
		}
	}
}

func TestCancelEndsRun(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	runID := s.start(t, parsePlan(t, `{"planId":"c","planVersion":"1","steps":[
		{"id":"gate","kind":"waitSignal","signal":"go"}]}`))
	s.waitEvent(t, runID, events.RunStarted)
	s.signal(t, runID, "CANCEL", "sig-c", `{}`)
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCancelled, terminal(evs))

	applied := s.waitApplied(t, runID, "sig-c")
	require.Equal(t, events.SignalOutcomeApplied, applied.Outcome)

	// A signal after the end is recorded with its reason and changes nothing.
	s.signal(t, runID, "go", "sig-late", `{}`)
	applied = s.waitApplied(t, runID, "sig-late")
	require.Equal(t, events.SignalOutcomeIgnored, applied.Outcome)
	require.Equal(t, events.SignalCodeRunTerminal, applied.Code)
	evs, err := s.log.EventsFetchAfter(t.Context(), runID, 0, 0)
	require.NoError(t, err)
	snap, err := events.Project(runID, evs)
	require.NoError(t, err)
	require.Equal(t, events.RunStatusCancelled, snap.Status)
}

func TestPauseHoldsDispatchUntilResume(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, parsePlan(t, `{"planId":"p","planVersion":"1","steps":[
		{"id":"gate","kind":"waitSignal","signal":"go"},
		{"id":"after","activity":"echo","dependsOn":["gate"]}]}`))
	s.waitEvent(t, runID, events.RunStarted)
	s.signal(t, runID, "PAUSE", "sig-p", `{}`)
	require.Equal(t, events.SignalOutcomeApplied, s.waitApplied(t, runID, "sig-p").Outcome)
	s.signal(t, runID, "go", "sig-go", `{}`)
	require.Equal(t, events.SignalOutcomeApplied, s.waitApplied(t, runID, "sig-go").Outcome)

	// Paused: the gate is done, but "after" is not dispatched.
	evs, err := s.log.EventsFetchAfter(t.Context(), runID, 0, 0)
	require.NoError(t, err)
	for _, ev := range evs {
		require.False(t, ev.EventType == events.StepScheduled && ev.StepID == "after", "nothing dispatched while paused")
	}
	s.signal(t, runID, "PAUSE", "sig-p2", `{}`)
	require.Equal(t, events.SignalCodeRunNotRunning, s.waitApplied(t, runID, "sig-p2").Code)

	s.signal(t, runID, "RESUME", "sig-r", `{}`)
	evs = s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
}

// waitApplied waits for the SignalApplied of signalID and returns its payload.
func (s *stack) waitApplied(t *testing.T, runID, signalID string) events.SignalAppliedData {
	t.Helper()
	var found *events.SignalAppliedData
	require.Eventually(t, func() bool {
		evs, err := s.log.EventsFetchAfter(t.Context(), runID, 0, 0)
		require.NoError(t, err)
		for _, ev := range evs {
			var d events.SignalAppliedData
			if ev.EventType == events.SignalApplied && ev.Data(&d) == nil && d.SignalID == signalID {
				found = &d
				return true
			}
		}
		return false
	}, waitFor, 10*time.Millisecond, "run %s applies signal %s", runID, signalID)
	return *found
}

// lazyTypes prints the event types of a log when a failure message is
// formatted, after the wait has filled it.
type lazyTypes struct{ evs *[]events.Event }

func (l lazyTypes) String() string {
	b, _ := json.Marshal(types(*l.evs))
	return string(b)
}

// A step fails for good and fails the run; an operator's RETRY_STEP
// reopens the run, re-runs the step as logical attempt 2 and brings back
// the dependant its failure skipped, and the run completes.
func TestRetryStepReopensFailedRun(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", func(tk task.Task) task.Result {
		if tk.StepID == "flaky" && tk.LogicalAttemptID == "1" {
			r := task.NewResult(tk, task.Failed, "", "raw")
			r.Error = &events.StepError{Code: "DOWNSTREAM", Message: "no", Retryable: false}
			return r
		}
		return echo(tk)
	})
	runID := s.start(t, parsePlan(t, `{"planId":"re","planVersion":"1","steps":[
		{"id":"flaky","activity":"x"},{"id":"after","activity":"x","dependsOn":["flaky"]}]}`))
	require.Equal(t, events.RunFailed, terminal(s.waitTerminal(t, runID)))

	s.signal(t, runID, "RETRY_STEP", "retry-1", `{"stepId":"flaky"}`)
	require.Equal(t, events.SignalOutcomeApplied, s.waitApplied(t, runID, "retry-1").Outcome)
	evs := s.waitEvent(t, runID, events.RunCompleted)
	snap, err := events.Project(runID, evs)
	require.NoError(t, err)
	require.Equal(t, events.RunStatusCompleted, snap.Status)
	for _, st := range snap.Steps {
		require.Equal(t, events.StepStatusSuccess, st.Status, st.StepID)
		require.Equal(t, "2", st.LogicalAttemptID, "%s ran again as attempt 2", st.StepID)
	}
	var registered int
	require.NoError(t, s.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM engine_runs WHERE run_id = $1`, runID).Scan(&registered))
	require.Zero(t, registered, "the run left the engine's registry again when it completed")
}

// TestSignalsApplyInAcceptanceOrderWhateverTheDelivery delivers a RESUME
// before the PAUSE accepted ahead of it, as two engines sharing the events
// consumer may (issue #16): the RESUME's round applies the PAUSE first, so
// the RESUME finds the run PAUSED and resumes it, the PAUSE's own late
// message decides nothing, and the run completes.
func TestSignalsApplyInAcceptanceOrderWhateverTheDelivery(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{StallAfter: time.Hour}) // no sweep: only the messages apply the signals
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, parsePlan(t, `{"planId":"order","planVersion":"1","steps":[
		{"id":"gate","kind":"waitSignal","signal":"go"},
		{"id":"after","activity":"echo","dependsOn":["gate"]}]}`))
	s.waitEvent(t, runID, events.RunStarted)
	pause := s.acceptSilently(t, runID, plan.SignalPause, "sig-pause")
	resume := s.acceptSilently(t, runID, plan.SignalResume, "sig-resume")

	s.publishEvent(t, resume)
	got := s.waitApplied(t, runID, "sig-resume")
	require.Equal(t, events.SignalOutcomeApplied, got.Outcome, "RESUME finds the run PAUSED: %s %s", got.Code, got.Reason)
	s.publishEvent(t, pause)

	s.signal(t, runID, "go", "sig-go", `{}`)
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	var applied []string
	for _, ev := range evs {
		var d events.SignalAppliedData
		if ev.EventType == events.SignalApplied {
			require.NoError(t, ev.Data(&d))
			require.Equal(t, events.SignalOutcomeApplied, d.Outcome, "%s: %s", d.SignalName, d.Reason)
			applied = append(applied, d.SignalID)
		}
	}
	require.Equal(t, []string{"sig-pause", "sig-resume", "sig-go"}, applied, "each signal applied once, in acceptance order")
}

// acceptSilently appends a SignalAccepted for the run to the log without
// its outbox row, so that the test delivers its message when it chooses
// (publishEvent), and returns the event as appended.
func (s *stack) acceptSilently(t *testing.T, runID, name, signalID string) events.Event {
	t.Helper()
	ev, err := events.New(events.Spec{RunID: runID, Type: events.SignalAccepted, LogicalAttemptID: signalID, PlanVersion: "1",
		Data: events.SignalAcceptedData{SignalName: name, SignalID: signalID}})
	require.NoError(t, err)
	res, err := eventlogtest.AppendLog(t.Context(), s.log, s.db.Pool, nil, ev)
	require.NoError(t, err)
	ev.RunSeq, ev.PersistedAt = res[0].RunSeq, res[0].PersistedAt
	return ev
}

// publishEvent publishes ev's bus copy to WEFT_EVENTS, as the outbox relay
// does.
func (s *stack) publishEvent(t *testing.T, ev events.Event) {
	t.Helper()
	subject, err := streams.EventSubject(ev.RunID, ev.EventType)
	require.NoError(t, err)
	data, err := json.Marshal(ev)
	require.NoError(t, err)
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(streams.HeaderEventType, string(ev.EventType))
	msg.Header.Set(streams.HeaderRunSeq, strconv.FormatInt(ev.RunSeq, 10))
	msg.Header.Set(nats.MsgIdHdr, ev.EventID)
	_, err = s.js.PublishMsg(t.Context(), msg)
	require.NoError(t, err)
}
