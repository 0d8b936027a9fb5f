package decide

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
)

// loop returns forEach step id over list with maxParallel, its input
// reading item and index.
func loop(id, list string, maxParallel int, deps ...string) plan.Step {
	s := withInput(act(id, deps...), `{"n": "${{ item }}", "i": "${{ index }}"}`)
	s.ForEach, s.MaxParallel = list, maxParallel
	return s
}

// failSlow makes s run every element even after one failed.
func failSlow(s plan.Step) plan.Step {
	f := false
	s.FailFast = &f
	return s
}

// doneOut completes element step's attempt with output out.
func doneOut(step string, attempt int, out string) Input {
	return ResultCompleted{StepID: step, LogicalAttempt: attempt, EngineAttemptID: "1", Output: json.RawMessage(out)}
}

func items(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(i + 1)
	}
	return `{"items": [` + strings.Join(parts, ",") + `]}`
}

// A forEach step records its list, runs at most maxParallel elements at
// once, each with its own input, and completes with their outputs in
// element order, which the next step reads.
func TestForEachRunsElementsAndCollectsOutputs(t *testing.T) {
	t.Parallel()
	b := setupWith(t, events.RunApprovedData{Input: json.RawMessage(items(3))},
		loop("fan", "input.items", 2),
		withInput(act("after", "fan"), `{"all": "${{ steps.fan.output }}"}`))
	d := b.decide(approve())
	require.Equal(t, []string{"RunStarted", "StepScheduled fan 1", "StepStarted fan 1",
		"StepScheduled fan[0] 1", "StepScheduled fan[1] 1"}, descs(d.Events))
	sched := d.Events[1].Data.(stepScheduledData)
	require.JSONEq(t, `[1,2,3]`, string(sched.Input), "the list is recorded")
	require.Equal(t, &events.ForEachData{Count: 3, MaxParallel: 2, FailFast: true}, sched.ForEach)
	require.Equal(t, []string{"fan[0]/1", "fan[1]/1"}, taskIDs(d), "no task for the forEach step itself")
	require.JSONEq(t, `{"n": 2, "i": 1}`, string(d.Tasks[1].Input))
	require.JSONEq(t, `{"n": 2, "i": 1}`, scheduledInput(t, d, "fan[1]"))

	b.decide(start("fan[1]", 1))
	d = b.decide(doneOut("fan[1]", 1, `{"v": 20}`))
	require.Equal(t, []string{"StepCompleted fan[1] 1", "StepScheduled fan[2] 1"}, descs(d.Events))
	d = b.decide(doneOut("fan[2]", 1, `{"v": 30}`))
	require.Equal(t, []string{"StepStarted fan[2] 1", "StepCompleted fan[2] 1"}, descs(d.Events))
	d = b.decide(doneOut("fan[0]", 1, `{"v": 10}`))
	require.Equal(t, []string{"StepStarted fan[0] 1", "StepCompleted fan[0] 1", "StepCompleted fan 1",
		"StepScheduled after 1"}, descs(d.Events))
	require.JSONEq(t, `[{"v": 10}, {"v": 20}, {"v": 30}]`, string(d.Events[2].Data.(events.StepCompletedData).Output))
	require.JSONEq(t, `{"all": [{"v": 10}, {"v": 20}, {"v": 30}]}`, string(d.Tasks[0].Input))
}

// An empty list completes the step at once with an empty output.
func TestForEachOfNothing(t *testing.T) {
	t.Parallel()
	b := setupWith(t, events.RunApprovedData{Input: json.RawMessage(`{"items": []}`)}, loop("fan", "input.items", 0))
	d := b.decide(approve())
	require.Equal(t, []string{"RunStarted", "StepScheduled fan 1", "StepStarted fan 1", "StepCompleted fan 1", "RunCompleted"},
		descs(d.Events))
	require.JSONEq(t, `[]`, string(d.Events[3].Data.(events.StepCompletedData).Output))
}

// A list that is not a list, or is longer than the limit, fails the step
// with EXPRESSION_ERROR before any element runs.
func TestForEachBadList(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ input, why string }{
		"not a list":   {`{"items": {"a": 1}}`, "forEach must yield a list"},
		"over the cap": {items(plan.MaxForEachElements + 1), "more than the limit of 10000"},
		"missing key":  {`{}`, "no such key"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupWith(t, events.RunApprovedData{Input: json.RawMessage(c.input)}, loop("fan", "input.items", 0))
			d := b.decide(approve())
			require.Equal(t, []string{"RunStarted", "StepFailed fan 1", "RunFailed 1"}, descs(d.Events))
			e := d.Events[1].Data.(events.StepFailedData).Error
			require.Equal(t, CodeExpressionError, e.Code)
			require.Contains(t, e.Message, c.why)
			require.Empty(t, d.Tasks)
		})
	}
	b := setupWith(t, events.RunApprovedData{Input: json.RawMessage(items(plan.MaxForEachElements))}, loop("fan", "input.items", 0))
	d := b.decide(approve())
	require.Len(t, d.Tasks, plan.DefaultMaxParallel, "a list at the cap runs")
}

// Under failFast the first failed element cancels the running ones and
// fails the step; RETRY_STEP then runs again only the elements that did
// not succeed, and the output keeps the earlier outputs.
func TestForEachFailFastAndRetryStep(t *testing.T) {
	t.Parallel()
	b := setupWith(t, events.RunApprovedData{Input: json.RawMessage(items(5))}, loop("fan", "input.items", 3))
	b.decide(approve())
	b.decide(doneOut("fan[0]", 1, `"a"`))
	d := b.decide(fail("fan[2]", 1, false))
	require.Equal(t, []string{"StepStarted fan[2] 1", "StepFailed fan[2] 1", "StepFailed fan[1] 1", "StepFailed fan[3] 1",
		"StepFailed fan 1", "RunFailed 1"}, descs(d.Events), "fan[4] never starts")
	require.Equal(t, []string{"fan[1]/1", "fan[3]/1"}, cancelIDs(d))
	require.Equal(t, CodeCancelled, d.Events[2].Data.(events.StepFailedData).Error.Code)
	e := d.Events[4].Data.(events.StepFailedData).Error
	require.Equal(t, CodeForEachFailed, e.Code)
	require.Equal(t, "element 2 failed: BOOM: boom", e.Message)

	d = b.decide(retryStep(1, "fan"))
	require.Equal(t, []string{"RunResumed 1", "StepRetryScheduled fan[1] 1", "StepRetryScheduled fan[2] 1",
		"StepRetryScheduled fan[3] 1", "StepRetryScheduled fan 1", "StepScheduled fan 2", "StepStarted fan 2",
		"StepScheduled fan[1] 2", "StepScheduled fan[2] 2", "StepScheduled fan[3] 2", "SignalApplied 1"}, descs(d.Events),
		"fan[0] succeeded and stays; three run again")
	b.decide(doneOut("fan[1]", 2, `"b"`))
	b.decide(doneOut("fan[2]", 2, `"c"`))
	b.decide(doneOut("fan[3]", 2, `"d"`))
	d = b.decide(doneOut("fan[4]", 1, `"e"`))
	require.Equal(t, []string{"StepStarted fan[4] 1", "StepCompleted fan[4] 1", "StepCompleted fan 2", "RunCompleted"}, descs(d.Events))
	require.JSONEq(t, `["a", "b", "c", "d", "e"]`, string(d.Events[2].Data.(events.StepCompletedData).Output))
}

// Without failFast every element runs; the step fails at the end.
func TestForEachWithoutFailFast(t *testing.T) {
	t.Parallel()
	b := setupWith(t, events.RunApprovedData{Input: json.RawMessage(items(3))}, failSlow(loop("fan", "input.items", 1)))
	b.decide(approve())
	d := b.decide(fail("fan[0]", 1, false))
	require.Equal(t, []string{"StepStarted fan[0] 1", "StepFailed fan[0] 1", "StepScheduled fan[1] 1"}, descs(d.Events))
	b.decide(doneOut("fan[1]", 1, `1`))
	d = b.decide(doneOut("fan[2]", 1, `2`))
	require.Equal(t, []string{"StepStarted fan[2] 1", "StepCompleted fan[2] 1", "StepFailed fan 1", "RunFailed 1"}, descs(d.Events))
	require.Equal(t, "element 0 failed: BOOM: boom", d.Events[2].Data.(events.StepFailedData).Error.Message)
}

// Each element has its own retry policy series and timers; a cancelled
// run asks the running elements, not the forEach step, to stop.
func TestForEachElementRetriesAndCancel(t *testing.T) {
	t.Parallel()
	b := setupWith(t, events.RunApprovedData{Input: json.RawMessage(items(2))},
		withRetry(loop("fan", "input.items", 2), 3, 0))
	b.decide(approve())
	d := b.decide(fail("fan[0]", 1, true))
	require.Equal(t, []string{"StepStarted fan[0] 1", "StepRetryScheduled fan[0] 1", "StepScheduled fan[0] 2"}, descs(d.Events),
		"a zero backoff retries at once")
	b = setupWith(t, events.RunApprovedData{Input: json.RawMessage(items(2))},
		withRetry(loop("fan", "input.items", 2), 3, 1e9))
	b.decide(approve())
	d = b.decide(fail("fan[0]", 1, true))
	require.Equal(t, []string{"fan[0]/2 retry"}, timerIDs(d))
	require.Equal(t, []string{"fan[0]/2 retry"}, timerIDs(Decision{Timers: b.s.Timers(b.p)}), "the state re-arms it")
	d = b.decide(fire("fan[0]", 2, TimerRetry))
	require.Equal(t, []string{"StepScheduled fan[0] 2"}, descs(d.Events))
	require.Equal(t, []string{"fan[0]/2"}, taskIDs(d))

	d = b.decide(sig(1, plan.SignalCancel, ""))
	require.ElementsMatch(t, []string{"fan[0]/2", "fan[1]/1"}, cancelIDs(d))
}

// A resync sends again the tasks of elements that went quiet, with their
// recorded inputs.
func TestForEachResyncResendsElements(t *testing.T) {
	t.Parallel()
	b := setupWith(t, events.RunApprovedData{Input: json.RawMessage(items(2))}, loop("fan", "input.items", 0))
	b.decide(approve())
	b.decide(doneOut("fan[0]", 1, `1`))
	d := b.decide(Resync{Now: later.Add(plan.DefaultTimeout)})
	require.Equal(t, []string{"fan[1]/1"}, taskIDs(d))
	require.JSONEq(t, `{"n": 2, "i": 1}`, string(d.Tasks[0].Input))
}

// A checkpoint taken mid-fan-out restores the state a fold gives, Fans
// included.
func TestForEachCheckpoint(t *testing.T) {
	t.Parallel()
	b := setupWith(t, events.RunApprovedData{Input: json.RawMessage(items(5))}, withRetry(loop("fan", "input.items", 3), 3, 1e9))
	b.decide(approve())
	b.decide(doneOut("fan[1]", 1, `1`))
	b.decide(fail("fan[0]", 1, true))
	data, err := MarshalCheckpoint(b.p, b.s)
	require.NoError(t, err)
	restored, err := RestoreCheckpoint(b.p, data)
	require.NoError(t, err)
	require.Equal(t, b.s, restored)
	require.Equal(t, Fan{Items: []string{"1", "2", "3", "4", "5"}, Running: 2, Waiting: 1, Done: 1, Next: 4}, restored.Fans["fan"])
}

// The timeouts apply to each element: its scheduleToStartTimeout and
// heartbeatTimeout are its own, and a runTimeout fails the elements in
// flight and the run; the forEach step itself has no attempt timers.
func TestForEachElementsTimeOut(t *testing.T) {
	t.Parallel()
	s := loop("fan", "input.items", 2)
	s.ScheduleToStartTimeout, s.HeartbeatTimeout = plan.Duration(time.Minute), plan.Duration(time.Minute)
	s = withRetry(s, 2, 0)
	b := setupWith(t, events.RunApprovedData{Input: json.RawMessage(items(2))}, s)
	d := b.decide(approve())
	require.Equal(t, []string{"fan[0]/1 scheduleToStart", "fan[1]/1 scheduleToStart"}, timerIDs(d))
	d = b.decide(start("fan[1]", 1))
	require.Equal(t, []string{"fan[1]/1 heartbeat"}, timerIDs(d))
	require.ElementsMatch(t, []string{"fan[0]/1 scheduleToStart", "fan[1]/1 heartbeat"}, timerIDs(Decision{Timers: b.s.Timers(b.p)}),
		"the state re-arms the elements' timers, none for the step")
	d = b.decide(at("fan[0]", 1, TimerScheduleToStart, t0.Add(2*time.Minute)))
	require.Equal(t, []string{"StepRetryScheduled fan[0] 1", "StepScheduled fan[0] 2"}, descs(d.Events))
	require.Equal(t, []string{"fan[0]/1"}, cancelIDs(d))
	d = b.decide(TimerFired{StepID: "fan", LogicalAttempt: 1, Kind: TimerHeartbeat, Now: later})
	require.Empty(t, d.Events, "the forEach step has no heartbeat of its own")

	r := loop("fan", "input.items", 2)
	b = setupWith(t, events.RunApprovedData{Input: json.RawMessage(items(3))}, r)
	b.p.RunTimeout = plan.Duration(time.Minute)
	b.decide(approve())
	b.decide(start("fan[0]", 1))
	d = b.decide(TimerFired{Kind: TimerRunTimeout, LogicalAttempt: 1, Now: later})
	require.Equal(t, []string{"StepFailed fan[0] 1", "StepFailed fan[1] 1", "StepFailed fan 1", "RunFailed 1"}, descs(d.Events))
	require.ElementsMatch(t, []string{"fan[0]/1", "fan[1]/1"}, cancelIDs(d))
}
