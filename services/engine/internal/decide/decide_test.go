package decide

import (
	"cmp"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// roundCase is one table case: a run of steps is driven through given,
// then in is decided and its outputs compared. Nil lists mean none.
type roundCase struct {
	name    string
	steps   []plan.Step
	given   []Input
	in      Input
	want    []string // descs of the events
	tasks   []string
	timers  []string
	cancels []string
	code    string // for signals: the SignalApplied code, "" when applied
	// outcome is the SignalApplied outcome when it is neither applied nor
	// ignored (which code tells apart).
	outcome string
}

// runCases runs table cases in parallel and returns nothing: each case
// asserts its own decision.
func runCases(t *testing.T, cases []roundCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.steps...)
			for _, in := range tc.given {
				b.decide(in)
			}
			d := b.decide(tc.in)
			require.Equal(t, orEmpty(tc.want), descs(d.Events))
			require.Equal(t, orEmpty(tc.tasks), taskIDs(d))
			require.Equal(t, orEmpty(tc.timers), timerIDs(d))
			require.Equal(t, orEmpty(tc.cancels), cancelIDs(d))
			if _, ok := tc.in.(SignalAccepted); ok && len(d.Events) > 0 {
				v := applied(t, d)
				require.Equal(t, tc.code, v.Code)
				require.NotEmpty(t, v.Reason)
				want := map[bool]string{true: events.SignalOutcomeApplied, false: events.SignalOutcomeIgnored}[tc.code == ""]
				require.Equal(t, cmp.Or(tc.outcome, want), v.Outcome)
			}
		})
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

var (
	linear   = []plan.Step{act("a"), act("b", "a")}
	fan      = []plan.Step{act("a"), act("b"), act("c", "a", "b")}
	waitPlan = []plan.Step{wait("w", "go", time.Minute), act("b", "w")}
)

// TestDecideLifecycle covers each transition of a step and a run, and the
// duplicate and stale results that must decide nothing.
func TestDecideLifecycle(t *testing.T) {
	t.Parallel()
	runCases(t, []roundCase{
		{name: "approve starts the roots", steps: linear, in: approve(),
			want: []string{"RunStarted", "StepScheduled a 1"}, tasks: []string{"a/1"}},
		{name: "independent steps are scheduled together", steps: fan, in: approve(),
			want: []string{"RunStarted", "StepScheduled a 1", "StepScheduled b 1"}, tasks: []string{"a/1", "b/1"}},
		{name: "a second approve decides nothing", steps: linear, given: []Input{approve()}, in: approve()},
		{name: "started records StepStarted", steps: linear, given: []Input{approve()}, in: start("a", 1),
			want: []string{"StepStarted a 1"}},
		{name: "a redelivered started decides nothing", steps: linear, given: []Input{approve(), start("a", 1)},
			in: ResultStarted{StepID: "a", LogicalAttempt: 1, EngineAttemptID: "2"}},
		{name: "started for a step not scheduled", steps: linear, given: []Input{approve()}, in: start("b", 1)},
		{name: "started for a later attempt", steps: linear, given: []Input{approve()}, in: start("a", 2)},
		{name: "started for an unknown step", steps: linear, given: []Input{approve()}, in: start("zz", 1)},
		{name: "completed dispatches the ready dependant", steps: linear, given: []Input{approve(), start("a", 1)},
			in: done("a", 1), want: []string{"StepCompleted a 1", "StepScheduled b 1"}, tasks: []string{"b/1"}},
		{name: "completed without started records StepStarted first", steps: linear, given: []Input{approve()},
			in: done("a", 1), want: []string{"StepStarted a 1", "StepCompleted a 1", "StepScheduled b 1"}, tasks: []string{"b/1"}},
		{name: "a second completed decides nothing", steps: linear, given: []Input{approve(), done("a", 1)}, in: done("a", 1)},
		{name: "started after completed decides nothing", steps: linear, given: []Input{approve(), done("a", 1)}, in: start("a", 1)},
		{name: "failed after completed decides nothing", steps: linear, given: []Input{approve(), done("a", 1)}, in: fail("a", 1, true)},
		{name: "a dependant waits for all its dependencies", steps: fan, given: []Input{approve()},
			in: done("a", 1), want: []string{"StepStarted a 1", "StepCompleted a 1"}},
		{name: "the last dependency dispatches", steps: fan, given: []Input{approve(), done("a", 1)},
			in: done("b", 1), want: []string{"StepStarted b 1", "StepCompleted b 1", "StepScheduled c 1"}, tasks: []string{"c/1"}},
		{name: "the last step completes the run", steps: linear, given: []Input{approve(), done("a", 1)},
			in: done("b", 1), want: []string{"StepStarted b 1", "StepCompleted b 1", "RunCompleted"}},
		{name: "a retryable failure schedules a retry", steps: linear, given: []Input{approve()},
			in: fail("a", 1, true), want: []string{"StepStarted a 1", "StepRetryScheduled a 1"}, timers: []string{"a/2 retry"}},
		{name: "the retry timer schedules the next attempt", steps: linear, given: []Input{approve(), fail("a", 1, true)},
			in: fire("a", 2, TimerRetry), want: []string{"StepScheduled a 2"}, tasks: []string{"a/2"}},
		{name: "a retry timer that fires early is set again", steps: linear, given: []Input{approve(), fail("a", 1, true)},
			in: TimerFired{StepID: "a", LogicalAttempt: 2, Kind: TimerRetry, Now: t0}, timers: []string{"a/2 retry"}},
		{name: "a retry timer fired twice", steps: linear,
			given: []Input{approve(), fail("a", 1, true), fire("a", 2, TimerRetry)}, in: fire("a", 2, TimerRetry)},
		{name: "a timer of the wrong kind is stale", steps: linear, given: []Input{approve(), fail("a", 1, true)},
			in: fire("a", 2, TimerWaitTimeout)},
		{name: "a result of the previous attempt is stale", steps: linear,
			given: []Input{approve(), fail("a", 1, true), fire("a", 2, TimerRetry)}, in: done("a", 1)},
		{name: "a zero backoff retries at once", steps: []plan.Step{withRetry(act("a"), 3, 0)}, given: []Input{approve()},
			in: fail("a", 1, true), want: []string{"StepStarted a 1", "StepRetryScheduled a 1", "StepScheduled a 2"}, tasks: []string{"a/2"}},
		{name: "a non-retryable error fails the step and the run", steps: linear, given: []Input{approve()},
			in: fail("a", 1, false), want: []string{"StepStarted a 1", "StepFailed a 1", "StepSkipped b 1", "RunFailed 1"}},
		{name: "a non-retryable code fails for good", steps: []plan.Step{withRetry(act("a"), 3, time.Second, "BOOM"), act("b", "a")},
			given: []Input{approve()}, in: fail("a", 1, true), want: []string{"StepStarted a 1", "StepFailed a 1", "StepSkipped b 1", "RunFailed 1"}},
		{name: "exhausted attempts fail for good", steps: []plan.Step{withRetry(act("a"), 2, time.Second), act("b", "a")},
			given: []Input{approve(), fail("a", 1, true), fire("a", 2, TimerRetry)},
			in:    fail("a", 2, true), want: []string{"StepStarted a 2", "StepFailed a 2", "StepSkipped b 1", "RunFailed 1"}},
		{name: "a failure waits for the steps in flight", steps: fan, given: []Input{approve()},
			in: fail("a", 1, false), want: []string{"StepStarted a 1", "StepFailed a 1", "StepSkipped c 1"}},
		{name: "the run fails when the last step in flight ends", steps: fan, given: []Input{approve(), fail("a", 1, false)},
			in: done("b", 1), want: []string{"StepStarted b 1", "StepCompleted b 1", "RunFailed 1"}},
		{name: "a retryable failure ends a failing run", steps: fan, given: []Input{approve(), fail("a", 1, false)},
			in: fail("b", 1, true), want: []string{"StepStarted b 1", "StepRetryScheduled b 1", "StepSkipped b 2", "RunFailed 1"}},
		{name: "a failing run dispatches nothing and skips what never ran", steps: []plan.Step{act("a"), act("b"), act("d", "b")},
			given: []Input{approve(), fail("a", 1, false)}, in: done("b", 1),
			want: []string{"StepStarted b 1", "StepCompleted b 1", "StepSkipped d 1", "RunFailed 1"}},
		{name: "output that is not JSON fails the attempt", steps: linear, given: []Input{approve()},
			in:   ResultCompleted{StepID: "a", LogicalAttempt: 1, Output: json.RawMessage(`{"x":`)},
			want: []string{"StepStarted a 1", "StepFailed a 1", "StepSkipped b 1", "RunFailed 1"}},
		{name: "a paused run records results and dispatches nothing", steps: linear,
			given: []Input{approve(), sig(1, plan.SignalPause, "")}, in: done("a", 1), want: []string{"StepStarted a 1", "StepCompleted a 1"}},
		{name: "a paused run does not end by itself", steps: linear,
			given: []Input{approve(), done("a", 1), sig(1, plan.SignalPause, "")}, in: done("b", 1), want: []string{"StepStarted b 1", "StepCompleted b 1"}},
		{name: "a retry timer on a paused run waits for RESUME", steps: linear,
			given: []Input{approve(), fail("a", 1, true), sig(1, plan.SignalPause, "")}, in: fire("a", 2, TimerRetry)},
		{name: "a result for a cancelled run decides nothing", steps: linear,
			given: []Input{approve(), sig(1, plan.SignalCancel, "")}, in: done("a", 1)},
		{name: "a waitSignal root waits with a timeout", steps: waitPlan, in: approve(),
			want: []string{"RunStarted", "StepScheduled w 1", "StepStarted w 1"}, timers: []string{"w/1 waitTimeout"}},
		{name: "a wait without a timeout sets no timer", steps: []plan.Step{wait("w", "go", 0)}, in: approve(),
			want: []string{"RunStarted", "StepScheduled w 1", "StepStarted w 1"}},
		{name: "the wait timeout fails the step", steps: waitPlan, given: []Input{approve()},
			in: fire("w", 1, TimerWaitTimeout), want: []string{"StepFailed w 1", "StepSkipped b 1", "RunFailed 1"}},
		{name: "a wait timeout that fires early is set again", steps: waitPlan, given: []Input{approve()},
			in: TimerFired{StepID: "w", LogicalAttempt: 1, Kind: TimerWaitTimeout, Now: t0}, timers: []string{"w/1 waitTimeout"}},
		{name: "a worker result for a waitSignal step is stale", steps: waitPlan, given: []Input{approve()}, in: done("w", 1)},
		{name: "a retry timer for a waiting step is stale", steps: waitPlan, given: []Input{approve()}, in: fire("w", 1, TimerRetry)},
		{name: "a timer for a finished run is stale", steps: waitPlan,
			given: []Input{approve(), sig(1, plan.SignalCancel, "")}, in: fire("w", 1, TimerWaitTimeout)},
	})
}

// TestDecideTaskAndPayloads checks what a dispatched task carries and what
// the step and run events record.
func TestDecideTaskAndPayloads(t *testing.T) {
	t.Parallel()
	s := act("a")
	s.Input = json.RawMessage(`{"url":{"secretRef":"tok"}}`)
	s.Secrets = []plan.SecretRef{{Name: "tok", Key: "TOKEN"}}
	s.Queue, s.Timeout, s.IdempotencyKey = "q1", plan.Duration(30*time.Second), "k1"
	b := setup(t, s)
	d := b.decide(approve())
	require.Equal(t, []Task{{RunID: testRun, PlanVersion: "v1", StepID: "a", LogicalAttempt: 1, Activity: "echo",
		Queue: "q1", Input: s.Input, Secrets: s.Secrets, IdempotencyKey: "k1", Timeout: 30 * time.Second}}, d.Tasks)
	require.Equal(t, stepScheduledData{StepScheduledData: events.StepScheduledData{Activity: "echo", Queue: "q1"}}, d.Events[1].Data)

	d = b.decide(ResultFailed{StepID: "a", LogicalAttempt: 1, EngineAttemptID: "3", Jitter: 0.5,
		Error: events.StepError{Code: "E", Message: "m", Retryable: true}})
	require.Equal(t, []string{"StepStarted a 1", "StepRetryScheduled a 1"}, descs(d.Events), "a failure without a started result records StepStarted first")
	retry, ok := d.Events[1].Data.(events.StepRetryScheduledData)
	require.True(t, ok)
	require.Equal(t, "2", retry.NextLogicalAttemptID)
	require.Equal(t, t0.Add(900*time.Millisecond), retry.RetryAt, "1s shortened by jitter 0.2 × 0.5")
	require.Equal(t, "3", d.Events[0].EngineAttemptID)
	require.Equal(t, "3", d.Events[1].EngineAttemptID)
	require.Equal(t, t0.Add(900*time.Millisecond), d.Timers[0].DueAt)

	b.decide(fire("a", 2, TimerRetry))
	d = b.decide(ResultCompleted{StepID: "a", LogicalAttempt: 2, EngineAttemptID: "1", WorkerID: "w1", Output: json.RawMessage(`{"n":1}`),
		Artifacts: []events.ArtifactRef{{URI: "s3://b/k", Kind: "log"}}})
	require.Equal(t, []string{"StepStarted a 2", "StepCompleted a 2", "RunCompleted"}, descs(d.Events))
	require.Equal(t, events.StepStartedData{WorkerID: "w1"}, d.Events[0].Data, "StepStarted names the worker of the result")
	require.Equal(t, "1", d.Events[0].EngineAttemptID)
	require.Equal(t, events.StepCompletedData{Output: json.RawMessage(`{"n":1}`),
		Artifacts: []events.ArtifactRef{{URI: "s3://b/k", Kind: "log"}}}, d.Events[1].Data)
	require.Equal(t, events.RunStatusCompleted, b.snap.Status)
	require.Equal(t, "2", b.snap.Steps[0].LogicalAttemptID)
}

// TestDecideRunFailedNamesTheStep checks RunFailed's payload and that the
// reducer records the step's error as the run's root cause.
func TestDecideRunFailedNamesTheStep(t *testing.T) {
	t.Parallel()
	b := setup(t, linear...)
	b.decide(approve())
	d := b.decide(fail("a", 1, false))
	data, ok := d.Events[3].Data.(events.RunFailedData)
	require.True(t, ok)
	require.Equal(t, "a", data.StepID)
	require.Equal(t, "BOOM", data.Error.Code)
	require.Equal(t, "BOOM", b.snap.Error.Code)
	require.Equal(t, events.StepStatusSkipped, b.s.Steps["b"].Status)
}

// TestDecideWithoutRun checks that a state that has no run, or a run that
// was never approved, decides nothing.
func TestDecideWithoutRun(t *testing.T) {
	t.Parallel()
	p := &plan.Plan{PlanID: "p", PlanVersion: "v1", Steps: linear}
	s := NewState(p)
	require.True(t, Decide(p, s, RunApproved{Now: t0}).Empty(), "no RunID: no run")
	s.RunID = testRun
	require.True(t, Decide(p, s, RunApproved{Now: t0}).Empty(), "PENDING: not approved")
	require.True(t, Decide(p, s, nil).Empty())
	d := Decide(p, s, SignalAccepted{SignalID: "x", Name: plan.SignalCancel})
	require.Equal(t, []string{"SignalApplied 1"}, descs(d.Events), "a signal on a PENDING run is answered")
	require.Equal(t, events.SignalCodeRunNotStarted, applied(t, d).Code)
}

// TestRetryStepGivesAFreshBudget: after RETRY_STEP the retry policy counts
// attempts from the re-run, so a retryable failure is retried again.
func TestRetryStepGivesAFreshBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, withRetry(act("a"), 2, time.Second), act("x"))
	b.decide(approve())
	b.decide(fail("a", 1, true))
	b.decide(fire("a", 2, TimerRetry))
	require.Equal(t, []string{"StepStarted a 2", "StepFailed a 2"}, descs(b.decide(fail("a", 2, true)).Events))
	d := b.decide(retryStep(1, "a"))
	require.Equal(t, []string{"StepRetryScheduled a 2", "StepScheduled a 3", "SignalApplied 1"}, descs(d.Events))
	d = b.decide(fail("a", 3, true))
	require.Equal(t, []string{"StepStarted a 3", "StepRetryScheduled a 3"}, descs(d.Events))
	require.Equal(t, []string{"a/4 retry"}, timerIDs(d))
	require.Equal(t, 3, b.s.Steps["a"].SeriesStart)
}

// TestDecideFillsDefaults: a plan built in Go without ApplyDefaults runs
// with the default queue, timeout and retry policy.
func TestDecideFillsDefaults(t *testing.T) {
	t.Parallel()
	p := &plan.Plan{PlanID: "p", PlanVersion: "v1", Steps: []plan.Step{act("a")}}
	s, err := Fold(p, []events.Event{ev(t, 1, events.RunApproved, "", "", nil)})
	require.NoError(t, err)
	d, s := decide(p, s, RunApproved{Now: t0})
	require.Equal(t, plan.DefaultQueue, d.Tasks[0].Queue)
	require.Equal(t, plan.DefaultTimeout, d.Tasks[0].Timeout)
	d = Decide(p, s, ResultFailed{StepID: "a", LogicalAttempt: 1, Now: t0, Error: events.StepError{Code: "E", Retryable: true}})
	require.Equal(t, []string{"a/2 retry"}, timerIDs(d))
	require.Equal(t, t0.Add(plan.DefaultInitialBackoff), d.Timers[0].DueAt)
}

func TestDecideQueuesWhenFull(t *testing.T) {
	t.Parallel()
	runCases(t, []roundCase{
		{name: "a full environment queues the run", steps: linear, in: RunApproved{Full: true},
			want: []string{"RunQueued"}},
		{name: "a queued run is queued once", steps: linear, given: []Input{RunApproved{Full: true}},
			in: RunApproved{Full: true}},
		{name: "a queued run starts when there is room", steps: linear, given: []Input{RunApproved{Full: true}},
			in: approve(), want: []string{"RunStarted", "StepScheduled a 1"}, tasks: []string{"a/1"}},
		{name: "a resync of a full environment queues", steps: linear, in: Resync{Full: true},
			want: []string{"RunQueued"}},
		{name: "a started run ignores Full", steps: linear, given: []Input{approve()}, in: RunApproved{Full: true}},
	})
}

func TestDecideDelayedStart(t *testing.T) {
	t.Parallel()
	until := t0.Add(time.Minute)
	runCases(t, []roundCase{
		{name: "DELAY starts the run and holds its dispatch", steps: linear, in: RunApproved{DelayUntil: until},
			want: []string{"RunStarted"}, timers: []string{"/1 delay"}},
		{name: "an early delay timer is set again", steps: linear, given: []Input{RunApproved{DelayUntil: until}},
			in: TimerFired{LogicalAttempt: 1, Kind: TimerDelay, Now: until.Add(-time.Second)}, timers: []string{"/1 delay"}},
		{name: "the delay timer dispatches the roots", steps: linear, given: []Input{RunApproved{DelayUntil: until}},
			in: TimerFired{LogicalAttempt: 1, Kind: TimerDelay, Now: until}, want: []string{"StepScheduled a 1"}, tasks: []string{"a/1"}},
		{name: "a delay already past starts at once", steps: linear, in: RunApproved{DelayUntil: t0.Add(-time.Second)},
			want: []string{"RunStarted", "StepScheduled a 1"}, tasks: []string{"a/1"}},
	})
}
