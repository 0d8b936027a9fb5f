package decide

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

func pause(n int) Input  { return sig(n, plan.SignalPause, "") }
func resume(n int) Input { return sig(n, plan.SignalResume, "") }
func cancel(n int) Input { return sig(n, plan.SignalCancel, "") }

// TestDecideSignals covers every control signal in every run state it can
// meet, the signals that make no sense, and waitSignal delivery.
func TestDecideSignals(t *testing.T) {
	t.Parallel()
	blocked := []plan.Step{act("a"), act("b"), act("c", "a", "b"), act("x")}
	runCases(t, []roundCase{
		{name: "PAUSE pauses a running run", steps: linear, given: []Input{approve()}, in: pause(1),
			want: []string{"RunPaused 1", "SignalApplied 1"}},
		{name: "PAUSE on a paused run", steps: linear, given: []Input{approve(), pause(1)}, in: pause(2),
			want: []string{"SignalApplied 2"}, code: events.SignalCodeRunNotRunning},
		{name: "a second PAUSE has its own key", steps: linear, given: []Input{approve(), pause(1), resume(2)}, in: pause(3),
			want: []string{"RunPaused 2", "SignalApplied 3"}},
		{name: "PAUSE on a run that has not started waits for the start", steps: linear, in: pause(1)},
		{name: "the start applies a PAUSE sent before it", steps: linear, given: []Input{pause(1)}, in: approve(),
			want: []string{"RunStarted", "StepScheduled a 1", "RunPaused 1", "SignalApplied 1"}, tasks: []string{"a/1"}},
		{name: "CANCEL on a run that has not started applies the signals before it", steps: linear,
			given: []Input{pause(1)}, in: cancel(2),
			want: []string{"SignalApplied 1", "RunCancelled", "SignalApplied 2"}, code: events.SignalCodeRunNotStarted},
		{name: "RESUME on a running run", steps: linear, given: []Input{approve()}, in: resume(1),
			want: []string{"SignalApplied 1"}, code: events.SignalCodeRunNotPaused},
		{name: "RESUME dispatches what became ready", steps: linear, given: []Input{approve(), pause(1), done("a", 1)},
			in: resume(2), want: []string{"RunResumed 1", "StepScheduled b 1", "SignalApplied 2"}, tasks: []string{"b/1"}},
		{name: "RESUME ends a run that finished while paused", steps: linear,
			given: []Input{approve(), done("a", 1), pause(1), done("b", 1)}, in: resume(2),
			want: []string{"RunResumed 1", "RunCompleted", "SignalApplied 2"}},
		{name: "RESUME dispatches a retry that fell due", steps: linear,
			given: []Input{approve(), fail("a", 1, true), pause(1), fire("a", 2, TimerRetry)}, in: resume(2),
			want: []string{"RunResumed 1", "StepScheduled a 2", "SignalApplied 2"}, tasks: []string{"a/2"}},
		{name: "CANCEL asks in-flight steps to stop", steps: fan, given: []Input{approve(), done("a", 1)}, in: cancel(1),
			want: []string{"RunCancelled", "SignalApplied 1"}, cancels: []string{"b/1"}},
		{name: "CANCEL on a paused run", steps: linear, given: []Input{approve(), pause(1)}, in: cancel(2),
			want: []string{"RunCancelled", "SignalApplied 2"}, cancels: []string{"a/1"}},
		{name: "CANCEL on an approved run that has not started", steps: linear, in: cancel(1),
			want: []string{"RunCancelled", "SignalApplied 1"}},
		{name: "CANCEL on a cancelled run", steps: linear, given: []Input{approve(), cancel(1)}, in: cancel(2),
			want: []string{"SignalApplied 2"}, code: events.SignalCodeRunTerminal},
		{name: "a signal on a completed run", steps: linear, given: []Input{approve(), done("a", 1), done("b", 1)},
			in: pause(1), want: []string{"SignalApplied 1"}, code: events.SignalCodeRunTerminal},
		{name: "a duplicate signal decides nothing", steps: linear, given: []Input{approve(), pause(1)}, in: pause(1)},
		{name: "a duplicate of an ignored signal decides nothing", steps: linear, given: []Input{approve(), resume(1)}, in: resume(1)},
		{name: "an id shared by signals of two names is two signals", steps: linear, given: []Input{approve(), pause(1)},
			in: resume(1), want: []string{"RunResumed 1", "SignalApplied 2"}},
		{name: "a signal without an id decides nothing", steps: linear, given: []Input{approve()},
			in: SignalAccepted{Name: plan.SignalPause}},
		{name: "RETRY_STEP without a payload", steps: linear, given: []Input{approve()},
			in: sig(1, plan.SignalRetryStep, ""), want: []string{"SignalApplied 1"}, code: events.SignalCodeBadPayload},
		{name: "RETRY_STEP with a payload that is not JSON", steps: linear, given: []Input{approve()},
			in: sig(1, plan.SignalRetryStep, `{"stepId":`), want: []string{"SignalApplied 1"}, code: events.SignalCodeBadPayload},
		{name: "RETRY_STEP without a stepId", steps: linear, given: []Input{approve()},
			in: sig(1, plan.SignalRetryStep, `{"step":"a"}`), want: []string{"SignalApplied 1"}, code: events.SignalCodeBadPayload},
		{name: "RETRY_STEP of an unknown step", steps: linear, given: []Input{approve()},
			in: retryStep(1, "zz"), want: []string{"SignalApplied 1"}, code: events.SignalCodeUnknownStep},
		{name: "RETRY_STEP of a succeeded step", steps: linear, given: []Input{approve(), done("a", 1)},
			in: retryStep(1, "a"), want: []string{"SignalApplied 1"}, code: events.SignalCodeStepNotFailed},
		{name: "RETRY_STEP of a running step", steps: linear, given: []Input{approve(), start("a", 1)},
			in: retryStep(1, "a"), want: []string{"SignalApplied 1"}, code: events.SignalCodeStepNotFailed},
		{name: "RETRY_STEP of a step waiting for its retry", steps: linear, given: []Input{approve(), fail("a", 1, true)},
			in: retryStep(1, "a"), want: []string{"SignalApplied 1"}, code: events.SignalCodeStepNotFailed},
		{name: "RETRY_STEP of a skipped step", steps: fan, given: []Input{approve(), fail("a", 1, false)},
			in: retryStep(1, "c"), want: []string{"SignalApplied 1"}, code: events.SignalCodeStepNotFailed},
		{name: "RETRY_STEP reopens a failed run and brings back what its failure skipped", steps: linear,
			given: []Input{approve(), fail("a", 1, false)}, in: retryStep(1, "a"),
			want:  []string{"RunResumed 1", "StepRetryScheduled a 1", "StepRetryScheduled b 1", "StepScheduled a 2", "SignalApplied 1"},
			tasks: []string{"a/2"}},
		{name: "the reopened run fails again under a new key", steps: linear,
			given: []Input{approve(), fail("a", 1, false), retryStep(1, "a")}, in: fail("a", 2, false),
			want: []string{"StepStarted a 2", "StepFailed a 2", "StepSkipped b 2", "RunFailed 2"}},
		{name: "RETRY_STEP on a cancelled run", steps: linear, given: []Input{approve(), sig(1, plan.SignalCancel, "")},
			in: retryStep(2, "a"), want: []string{"SignalApplied 2"}, code: events.SignalCodeRunTerminal},
		{name: "RETRY_STEP re-runs a failed step and brings back its dependants", steps: fan,
			given: []Input{approve(), fail("a", 1, false)}, in: retryStep(1, "a"),
			want:  []string{"StepRetryScheduled a 1", "StepRetryScheduled c 1", "StepScheduled a 2", "SignalApplied 1"},
			tasks: []string{"a/2"}},
		{name: "RETRY_STEP on a paused run waits for RESUME", steps: fan,
			given: []Input{approve(), pause(1), fail("a", 1, false)}, in: retryStep(2, "a"),
			want: []string{"StepRetryScheduled a 1", "StepRetryScheduled c 1", "SignalApplied 2"}},
		{name: "RESUME dispatches the step RETRY_STEP brought back", steps: fan,
			given: []Input{approve(), pause(1), fail("a", 1, false), retryStep(2, "a")}, in: resume(3),
			want: []string{"RunResumed 1", "StepScheduled a 2", "SignalApplied 3"}, tasks: []string{"a/2"}},
		{name: "RETRY_STEP leaves a dependant another failure blocks", steps: blocked,
			given: []Input{approve(), fail("a", 1, false), fail("b", 1, false)}, in: retryStep(1, "a"),
			want: []string{"StepRetryScheduled a 1", "SignalApplied 1"}},
		{name: "retrying the last failure dispatches and brings back all", steps: blocked,
			given: []Input{approve(), fail("a", 1, false), fail("b", 1, false), retryStep(1, "a")}, in: retryStep(2, "b"),
			want: []string{"StepRetryScheduled b 1", "StepRetryScheduled c 1", "StepScheduled a 2", "StepScheduled b 2",
				"SignalApplied 2"}, tasks: []string{"a/2", "b/2"}},
		{name: "a signal completes the waiting step", steps: waitPlan, given: []Input{approve()},
			in: sig(1, "go", `{"ok":1}`), want: []string{"StepCompleted w 1", "StepScheduled b 1", "SignalApplied 1"},
			tasks: []string{"b/1"}},
		{name: "a signal for a step not waiting yet is kept", steps: []plan.Step{act("a"), wait("w", "go", 0, "a")},
			given: []Input{approve()}, in: sig(1, "go", `{"ok":1}`), want: []string{"SignalApplied 1"},
			outcome: events.SignalOutcomeBuffered},
		{name: "the step takes the kept signal once it is ready", steps: []plan.Step{act("a"), wait("w", "go", time.Minute, "a")},
			given: []Input{approve(), sig(1, "go", `{"ok":1}`)}, in: done("a", 1),
			want: []string{"StepStarted a 1", "StepCompleted a 1", "StepScheduled w 1", "StepStarted w 1", "StepCompleted w 1", "RunCompleted"}},
		{name: "a kept signal waits out a pause", steps: []plan.Step{act("a"), wait("w", "go", 0, "a")},
			given: []Input{approve(), sig(1, "go", ""), pause(2), done("a", 1)}, in: resume(3),
			want: []string{"RunResumed 1", "StepScheduled w 1", "StepStarted w 1", "StepCompleted w 1", "RunCompleted", "SignalApplied 3"}},
		{name: "each kept signal completes one step", steps: []plan.Step{act("a"), wait("w", "go", 0, "a"), wait("v", "go", 0, "w")},
			given: []Input{approve(), sig(1, "go", ""), sig(2, "go", "")}, in: done("a", 1),
			want: []string{"StepStarted a 1", "StepCompleted a 1", "StepScheduled w 1", "StepStarted w 1", "StepCompleted w 1",
				"StepScheduled v 1", "StepStarted v 1", "StepCompleted v 1", "RunCompleted"}},
		{name: "a signal for a step that already completed", steps: waitPlan, given: []Input{approve(), sig(1, "go", "")},
			in: sig(2, "go", ""), want: []string{"SignalApplied 2"}, code: events.SignalCodeNotWaiting},
		{name: "a signal no step waits for", steps: waitPlan, given: []Input{approve()},
			in: sig(1, "other", ""), want: []string{"SignalApplied 1"}, code: events.SignalCodeUnknownSignal},
		{name: "signal names are case-sensitive", steps: linear, given: []Input{approve()},
			in: sig(1, "pause", ""), want: []string{"SignalApplied 1"}, code: events.SignalCodeUnknownSignal},
		{name: "a waitSignal payload that is not JSON", steps: waitPlan, given: []Input{approve()},
			in: sig(1, "go", "{"), want: []string{"SignalApplied 1"}, code: events.SignalCodeBadPayload},
		{name: "a waitSignal signal on a paused run", steps: waitPlan, given: []Input{approve(), pause(1)},
			in: sig(2, "go", ""), want: []string{"StepCompleted w 1", "SignalApplied 2"}},
		{name: "a waitSignal signal on a run not started waits for the start", steps: waitPlan, in: sig(1, "go", "")},
		{name: "the start completes a waitSignal step with a signal sent before it", steps: waitPlan,
			given: []Input{sig(1, "go", `{"ok":1}`)}, in: approve(),
			want:  []string{"RunStarted", "StepScheduled w 1", "StepStarted w 1", "StepCompleted w 1", "StepScheduled b 1", "SignalApplied 1"},
			tasks: []string{"b/1"}, timers: []string{"w/1 waitTimeout"}},
	})
}

// TestSignalAppliedRecord checks the SignalApplied event: its payload, and
// that every event the signal caused names it.
func TestSignalAppliedRecord(t *testing.T) {
	t.Parallel()
	b := setup(t, waitPlan...)
	b.decide(approve())
	in := sig(7, "go", `{"approved":true}`)
	d := b.decide(in)
	signal := in.(SignalAccepted)
	for _, e := range d.Events {
		require.Equal(t, signal.SignalID, e.CausedBySignalID, "%s", e.Type)
	}
	last := d.Events[len(d.Events)-1]
	require.Equal(t, signal.EventID, last.ParentEventID)
	require.Equal(t, events.SignalAppliedData{SignalID: signal.SignalID, SignalName: "go", Outcome: events.SignalOutcomeApplied,
		Reason: "completed 1 waiting step(s)", StepIDs: []string{"w"}}, last.Data)
	require.Equal(t, events.StepCompletedData{Output: json.RawMessage(`{"approved":true}`), Artifacts: []events.ArtifactRef{}},
		d.Events[0].Data)
	require.True(t, b.s.Signals[signal.ref()])
	require.Equal(t, 1, b.s.SignalsApplied)

	d = b.decide(retryStep(8, "w"))
	v := applied(t, d)
	require.Equal(t, events.SignalCodeStepNotFailed, v.Code)
	require.Contains(t, v.Reason, `step "w" is SUCCESS`)
	require.Empty(t, v.StepIDs)

	b = setup(t, fan...)
	b.decide(approve())
	b.decide(fail("a", 1, false))
	v = applied(t, b.decide(retryStep(1, "a")))
	require.Equal(t, []string{"a", "c"}, v.StepIDs)
	require.Equal(t, events.StepStatusPending, b.s.Steps["c"].Status)
	require.Equal(t, 2, b.s.Steps["c"].Attempt)
}

// TestCancelRequests checks the cancel requests, and that State.InFlight
// lists them again for a sweep.
func TestCancelRequests(t *testing.T) {
	t.Parallel()
	steps := []plan.Step{act("a"), act("b"), wait("w", "go", time.Minute)}
	steps[1].Queue = "gpu"
	b := setup(t, steps...)
	b.decide(approve())
	b.decide(start("a", 1))
	d := b.decide(cancel(1))
	reason := "cancelled by signal " + d.Events[0].CausedBySignalID
	want := []Cancel{
		{RunID: testRun, StepID: "a", LogicalAttempt: 1, Queue: plan.DefaultQueue, Reason: reason},
		{RunID: testRun, StepID: "b", LogicalAttempt: 1, Queue: "gpu", Reason: reason},
	}
	require.Equal(t, want, d.Cancels, "the waiting waitSignal step has no worker to cancel")
	require.Equal(t, want, b.s.InFlight(b.p, reason))
	require.Equal(t, events.RunCancelledData{Reason: reason}, d.Events[0].Data)
	require.Empty(t, b.s.Timers(b.p), "a finished run needs no timers")
}

// TestBufferedSignalRecord checks a signal kept for a step that did not
// wait yet: its SignalApplied says buffered and names the step, the state
// keeps it with its payload, and the step, once ready, completes with that
// payload in events caused by the signal, the StepCompleted naming the
// SignalAccepted event as its parent; then the state no longer keeps it.
func TestBufferedSignalRecord(t *testing.T) {
	t.Parallel()
	b := setup(t, act("a"), wait("w", "go", time.Minute, "a"))
	b.decide(approve())
	in := sig(3, "go", `{"by":"alice"}`)
	d := b.decide(in)
	signal := in.(SignalAccepted)
	v := applied(t, d)
	require.Equal(t, events.SignalOutcomeBuffered, v.Outcome)
	require.Equal(t, []string{"w"}, v.StepIDs)
	require.Len(t, b.s.Buffered, 1)
	require.JSONEq(t, `{"by":"alice"}`, string(b.s.Buffered[0].Payload))

	d = b.decide(done("a", 1))
	require.Empty(t, d.Timers, "a step that completes at once sets no timeout")
	var completed events.Spec
	for _, e := range d.Events {
		if e.StepID == "w" {
			require.Equal(t, signal.SignalID, e.CausedBySignalID, "%s", e.Type)
		}
		if e.Type == events.StepCompleted && e.StepID == "w" {
			completed = e
		}
	}
	require.Equal(t, signal.EventID, completed.ParentEventID)
	require.Equal(t, events.StepCompletedData{Output: json.RawMessage(`{"by":"alice"}`), Artifacts: []events.ArtifactRef{}}, completed.Data)
	require.Empty(t, b.s.Buffered)
	require.Equal(t, events.RunStatusCompleted, b.s.Status)
}

// TestSignalsApplyInAcceptanceOrder delivers signals out of the order the
// gateway accepted them in, as two engines sharing the events consumer
// may: each signal still applies in acceptance (runSeq) order, the ones
// accepted before it first, and their own late messages decide nothing.
func TestSignalsApplyInAcceptanceOrder(t *testing.T) {
	t.Parallel()
	t.Run("RESUME delivered before the PAUSE accepted ahead of it", func(t *testing.T) {
		t.Parallel()
		b := setup(t, linear...)
		b.decide(approve())
		p, r := pause(1).(SignalAccepted), resume(2).(SignalAccepted)
		b.accepted(p)
		b.accepted(r)

		d := b.decide(r)
		require.Equal(t, []string{"RunPaused 1", "SignalApplied 1", "RunResumed 1", "SignalApplied 2"}, descs(d.Events))
		for i, s := range []SignalAccepted{p, r} {
			e := d.Events[2*i+1]
			require.Equal(t, s.SignalID, e.CausedBySignalID, "each event names the signal that caused it")
			require.Equal(t, s.EventID, e.ParentEventID, "each SignalApplied names its own SignalAccepted")
			require.Equal(t, events.SignalOutcomeApplied, e.Data.(events.SignalAppliedData).Outcome, "%s", s.Name)
		}
		require.True(t, b.decide(p).Empty(), "the PAUSE's own late message decides nothing")
		require.Equal(t, events.RunStatusRunning, b.s.Status)
		require.Empty(t, b.s.Pending)
	})
	t.Run("a signal applies only the pending ones accepted before it", func(t *testing.T) {
		t.Parallel()
		b := setup(t, linear...)
		b.decide(approve())
		p, r, c := pause(1).(SignalAccepted), resume(2).(SignalAccepted), cancel(3).(SignalAccepted)
		for _, s := range []SignalAccepted{p, r, c} {
			b.accepted(s)
		}
		d := b.decide(r)
		require.Equal(t, []string{"RunPaused 1", "SignalApplied 1", "RunResumed 1", "SignalApplied 2"}, descs(d.Events))
		require.Equal(t, []SignalAccepted{{SignalID: c.SignalID, Name: c.Name, EventID: c.EventID}}, b.s.Pending,
			"the CANCEL accepted after the RESUME waits for its own message")
		d = b.decide(c)
		require.Equal(t, []string{"RunCancelled", "SignalApplied 3"}, descs(d.Events))
		require.True(t, b.decide(p).Empty())
	})
	t.Run("the last accepted signal applies every one before it", func(t *testing.T) {
		t.Parallel()
		b := setup(t, waitPlan...)
		b.decide(approve())
		ins := []SignalAccepted{pause(1).(SignalAccepted), sig(2, "go", `{"n":2}`).(SignalAccepted), resume(3).(SignalAccepted)}
		for _, s := range ins {
			b.accepted(s)
		}
		d := b.decide(ins[2])
		require.Equal(t, []string{"RunPaused 1", "SignalApplied 1", "StepCompleted w 1", "SignalApplied 2",
			"RunResumed 1", "StepScheduled b 1", "SignalApplied 3"}, descs(d.Events))
		require.Equal(t, []string{"b/1"}, taskIDs(d))
		for _, s := range ins[:2] {
			require.True(t, b.decide(s).Empty(), "%s arrives late", s.Name)
		}
	})
}

// TestPendingSignalsApplyAtTheNextRound accepts signals whose messages have
// not come (lost, or late): the run's next round, whatever its input,
// applies them first, in acceptance order, so a run never ends with an
// accepted signal unapplied; the events of the input itself name no
// signal, and a signal's late message decides nothing.
func TestPendingSignalsApplyAtTheNextRound(t *testing.T) {
	t.Parallel()
	for _, tc := range []roundCase{
		{name: "a result applies a pending PAUSE first", steps: linear, given: []Input{approve(), accept(pause(1))},
			in: done("a", 1), want: []string{"RunPaused 1", "SignalApplied 1", "StepStarted a 1", "StepCompleted a 1"}},
		{name: "a last result after a pending CANCEL does not complete the run", steps: linear,
			given: []Input{approve(), done("a", 1), accept(cancel(1))}, in: done("b", 1),
			want: []string{"RunCancelled", "SignalApplied 1"}, cancels: []string{"b/1"}},
		{name: "a timer applies pending signals in acceptance order", steps: linear,
			given: []Input{approve(), fail("a", 1, true), accept(pause(1)), accept(resume(2))}, in: fire("a", 2, TimerRetry),
			want:  []string{"RunPaused 1", "SignalApplied 1", "RunResumed 1", "StepScheduled a 2", "SignalApplied 2"},
			tasks: []string{"a/2"}},
		{name: "a result's own events name no signal", steps: linear, given: []Input{approve(), accept(pause(1))},
			in: start("a", 1), want: []string{"RunPaused 1", "SignalApplied 1", "StepStarted a 1"}},
		{name: "the start comes before a signal accepted after the approval", steps: linear,
			given: []Input{accept(pause(1))}, in: approve(),
			want: []string{"RunStarted", "StepScheduled a 1", "RunPaused 1", "SignalApplied 1"}, tasks: []string{"a/1"}},
		{name: "a stale result still applies a pending signal", steps: linear,
			given: []Input{approve(), done("a", 1), accept(pause(1))}, in: done("a", 1),
			want: []string{"RunPaused 1", "SignalApplied 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.steps...)
			var late []Input
			for _, in := range tc.given {
				if a, ok := in.(accepted); ok {
					b.accepted(b.stamp(a.SignalAccepted).(SignalAccepted))
					late = append(late, a.SignalAccepted)
					continue
				}
				b.decide(in)
			}
			d := b.decide(tc.in)
			require.Equal(t, tc.want, descs(d.Events))
			require.Equal(t, orEmpty(tc.tasks), taskIDs(d))
			require.Equal(t, orEmpty(tc.cancels), cancelIDs(d))
			for i := len(d.Events) - 1; i >= 0 && d.Events[i].Type != events.SignalApplied; i-- {
				require.Empty(t, d.Events[i].CausedBySignalID, "%s is the input's, not a signal's", d.Events[i].Type)
			}
			require.Empty(t, b.s.Pending)
			for _, in := range late {
				require.True(t, b.decide(in).Empty(), "the signal's late message decides nothing")
			}
		})
	}
}

// accepted is a test input that only appends a signal's SignalAccepted to
// the log, as the gateway does; its message is not delivered.
type accepted struct{ SignalAccepted }

// accept returns the input that accepts the signal in without delivering
// it.
func accept(in Input) Input { return accepted{in.(SignalAccepted)} }
