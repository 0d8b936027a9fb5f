package decide

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

// timed returns activity step id with a schedule-to-start and a heartbeat
// timeout (zero: none) and two attempts, retried at once.
func timed(id string, toStart, heartbeat time.Duration, deps ...string) plan.Step {
	s := withRetry(act(id, deps...), 2, 0)
	s.ScheduleToStartTimeout, s.HeartbeatTimeout = plan.Duration(toStart), plan.Duration(heartbeat)
	return s
}

// at returns a timer of kind for step's attempt firing at now.
func at(step string, attempt int, kind TimerKind, now time.Time) TimerFired {
	return TimerFired{StepID: step, LogicalAttempt: attempt, Kind: kind, Now: now}
}

func TestScheduleToStartTimeout(t *testing.T) {
	t.Parallel()
	runCases(t, []roundCase{
		{name: "scheduling arms the timer", steps: []plan.Step{timed("a", time.Minute, 0)},
			in: approve(), want: []string{"RunStarted", "StepScheduled a 1"}, tasks: []string{"a/1"},
			timers: []string{"a/1 scheduleToStart"}},
		{name: "an attempt no worker started fails, is retried, and is cancelled", steps: []plan.Step{timed("a", time.Minute, 0)},
			given: []Input{approve()}, in: fire("a", 1, TimerScheduleToStart),
			want: []string{"StepRetryScheduled a 1", "StepScheduled a 2"}, tasks: []string{"a/2"},
			timers: []string{"a/2 scheduleToStart"}, cancels: []string{"a/1"}},
		{name: "a started attempt is not timed out", steps: []plan.Step{timed("a", time.Minute, 0)},
			given: []Input{approve(), start("a", 1)}, in: fire("a", 1, TimerScheduleToStart)},
		{name: "a stale timer does nothing", steps: []plan.Step{timed("a", time.Minute, 0)},
			given: []Input{approve(), fire("a", 1, TimerScheduleToStart)}, in: fire("a", 1, TimerScheduleToStart)},
		{name: "the last attempt fails the step and the run", steps: []plan.Step{timed("a", time.Minute, 0)},
			given: []Input{approve(), fire("a", 1, TimerScheduleToStart)},
			in:    TimerFired{StepID: "a", LogicalAttempt: 2, Kind: TimerScheduleToStart, Now: later.Add(time.Hour)},
			want:  []string{"StepFailed a 2", "RunFailed 1"}, cancels: []string{"a/2"}},
	})

	b := setup(t, timed("a", time.Minute, 0))
	b.decide(approve())
	d := b.decide(TimerFired{StepID: "a", LogicalAttempt: 1, Kind: TimerScheduleToStart, Now: t0.Add(30 * time.Second)})
	require.Empty(t, d.Events, "an early timer fires no timeout")
	require.Equal(t, []Timer{{RunID: testRun, StepID: "a", LogicalAttempt: 1, Kind: TimerScheduleToStart, DueAt: t0.Add(time.Minute)}}, d.Timers)
	d = b.decide(at("a", 1, TimerScheduleToStart, t0.Add(time.Minute)))
	require.Equal(t, CodeScheduleToStartTimeout, b.s.Steps["a"].Error.Code)
	require.Equal(t, "SCHEDULE_TO_START_TIMEOUT/a/1", d.Cancels[0].Notice)
	require.Equal(t, plan.DefaultQueue, d.Cancels[0].Queue)
}

func TestHeartbeatTimeout(t *testing.T) {
	t.Parallel()
	runCases(t, []roundCase{
		{name: "a start arms the timer", steps: []plan.Step{timed("a", 0, time.Minute)},
			given: []Input{approve()}, in: start("a", 1), want: []string{"StepStarted a 1"}, timers: []string{"a/1 heartbeat"}},
		{name: "no heartbeat fails the attempt, retried", steps: []plan.Step{timed("a", 0, time.Minute)},
			given: []Input{approve(), start("a", 1)}, in: fire("a", 1, TimerHeartbeat),
			want: []string{"StepRetryScheduled a 1", "StepScheduled a 2"}, tasks: []string{"a/2"}, cancels: []string{"a/1"}},
		{name: "an attempt not started has no heartbeat timeout", steps: []plan.Step{timed("a", 0, time.Minute)},
			given: []Input{approve()}, in: fire("a", 1, TimerHeartbeat)},
		{name: "an ended attempt has none", steps: []plan.Step{timed("a", 0, time.Minute)},
			given: []Input{approve(), start("a", 1), done("a", 1)}, in: fire("a", 1, TimerHeartbeat)},
	})

	b := setup(t, timed("a", 0, time.Minute))
	b.decide(approve())
	b.decide(start("a", 1))
	fresh := t0.Add(50 * time.Second)
	d := b.decide(TimerFired{StepID: "a", LogicalAttempt: 1, Kind: TimerHeartbeat, LastHeartbeat: fresh, Now: t0.Add(time.Minute)})
	require.Empty(t, d.Events, "a fresh heartbeat writes no event")
	require.Empty(t, d.Cancels)
	require.Equal(t, []Timer{{RunID: testRun, StepID: "a", LogicalAttempt: 1, Kind: TimerHeartbeat, DueAt: fresh.Add(time.Minute)}}, d.Timers)
	stale := TimerFired{StepID: "a", LogicalAttempt: 1, Kind: TimerHeartbeat, LastHeartbeat: fresh, Now: fresh.Add(time.Minute)}
	d = b.decide(stale)
	require.Equal(t, []string{"StepRetryScheduled a 1", "StepScheduled a 2"}, descs(d.Events), "exactly a timeout after the last heartbeat")
	require.Equal(t, CodeHeartbeatTimeout, b.s.Steps["a"].Error.Code)
	require.Equal(t, "HEARTBEAT_TIMEOUT/a/1", d.Cancels[0].Notice)
}

func TestHeartbeatTimeoutOfAKeyedAttemptIsIndeterminate(t *testing.T) {
	t.Parallel()
	s := timed("a", 0, time.Minute)
	s.IdempotencyKey = "charge-1"
	b := setup(t, s)
	b.decide(approve())
	b.decide(start("a", 1))
	d := b.decide(fire("a", 1, TimerHeartbeat))
	require.Len(t, d.Reconciliations, 1)
	require.Equal(t, task.StatusIndeterminate, d.Reconciliations[0].Status)
	require.Equal(t, CodeHeartbeatTimeout, d.Reconciliations[0].Error.Code)
}

// runTimed returns a run of steps whose plan has a runTimeout of a minute.
func runTimed(t *testing.T, steps ...plan.Step) *bundle {
	t.Helper()
	b := setup(t, steps...)
	b.p.RunTimeout, b.p.SchemaVersion = plan.Duration(time.Minute), plan.SchemaVersionExpressions
	return b
}

func TestRunTimeout(t *testing.T) {
	t.Parallel()
	b := runTimed(t, act("a"), act("b"), act("c", "a"), wait("w", "go", 0))
	d := b.decide(approve())
	require.Contains(t, d.Timers, Timer{RunID: testRun, LogicalAttempt: 1, Kind: TimerRunTimeout, DueAt: t0.Add(time.Minute)})
	require.Equal(t, t0, b.s.Run.StartedAt)
	b.decide(start("a", 1))
	b.decide(done("b", 1))

	early := b.decide(at("", 1, TimerRunTimeout, t0.Add(59*time.Second)))
	require.Empty(t, early.Events)
	require.Equal(t, []string{"/1 runTimeout"}, timerIDs(early), "an early timer is armed again")

	d = b.decide(at("", 1, TimerRunTimeout, t0.Add(time.Minute)))
	require.Equal(t, []string{"StepFailed a 1", "StepSkipped c 1", "StepFailed w 1", "RunFailed 1"}, descs(d.Events))
	require.Equal(t, []string{"a/1"}, cancelIDs(d), "only activities get cancel notices")
	require.Equal(t, CodeRunTimeout, d.Cancels[0].Notice)
	require.Equal(t, events.RunStatusFailed, b.s.Status)
	var data events.RunFailedData
	require.NoError(t, b.log[len(b.log)-1].Data(&data))
	require.Equal(t, CodeRunTimeout, data.Error.Code)
	require.Equal(t, events.RunStatusFailed, b.snap.Status)
	require.Equal(t, CodeRunTimeout, b.snap.Error.Code)

	require.True(t, b.decide(at("", 1, TimerRunTimeout, later)).Empty(), "an ended run's timer does nothing")
}

func TestRunTimeoutCountsFromTheStart(t *testing.T) {
	t.Parallel()
	b := runTimed(t, act("a"))
	b.decide(RunApproved{Full: true})
	require.Empty(t, b.s.Run.StartedAt, "a queued run has not started")
	b.decide(RunApproved{Now: t0.Add(time.Hour)})
	require.Equal(t, t0.Add(time.Hour), b.s.Run.StartedAt)
	require.Empty(t, b.decide(at("", 1, TimerRunTimeout, t0.Add(time.Hour+time.Second))).Events, "not yet a minute since the start")

	// RETRY_STEP reopens the failed run: its runTimeout counts afresh.
	b.decide(at("", 1, TimerRunTimeout, t0.Add(2*time.Hour)))
	require.Equal(t, events.RunStatusFailed, b.s.Status)
	d := b.decide(sig(1, plan.SignalRetryStep, `{"stepId":"a"}`))
	require.Equal(t, events.RunStatusRunning, b.s.Status)
	require.Contains(t, timerIDs(d), "/1 runTimeout")
	require.Equal(t, b.now, b.s.Run.StartedAt)
}

func TestTimeoutTimersRearm(t *testing.T) {
	t.Parallel()
	b := runTimed(t, timed("a", time.Minute, 0), timed("b", 0, 2*time.Minute))
	b.decide(approve())
	b.decide(ResultStarted{StepID: "b", LogicalAttempt: 1, Now: t0.Add(time.Second)})
	require.ElementsMatch(t, []Timer{
		{RunID: testRun, LogicalAttempt: 1, Kind: TimerRunTimeout, DueAt: t0.Add(time.Minute)},
		{RunID: testRun, StepID: "a", LogicalAttempt: 1, Kind: TimerScheduleToStart, DueAt: t0.Add(time.Minute)},
		{RunID: testRun, StepID: "b", LogicalAttempt: 1, Kind: TimerHeartbeat, DueAt: t0.Add(time.Second + 2*time.Minute)},
	}, b.s.Timers(b.p))
}

func TestCheckpointKeepsTheRunStart(t *testing.T) {
	t.Parallel()
	b := runTimed(t, act("a"))
	b.decide(approve())
	data, err := MarshalCheckpoint(b.p, b.s)
	require.NoError(t, err)
	got, err := RestoreCheckpoint(b.p, data)
	require.NoError(t, err)
	require.Equal(t, b.s, got)
	require.Equal(t, t0, got.Run.StartedAt)
}

// TestPersistedGoldenCheckpointRunStart: a checkpoint records when the run
// started, from which its runTimeout counts (run.startedAt), byte for byte
// as testdata/persisted/Checkpoint_runStart.json holds it, and today's
// reader restores it; a record without it (an older writer's) restores a
// zero start.
func TestPersistedGoldenCheckpointRunStart(t *testing.T) {
	t.Parallel()
	p := checkpointPlan(t)
	want := NewState(p)
	want.RunID, want.Head, want.Status = testRun, 2, events.RunStatusRunning
	want.Run = RunInfo{TenantID: "acme", PlanID: "p", StartedAt: time.Date(2024, 7, 1, 12, 0, 0, 123456000, time.UTC)}
	written, err := MarshalCheckpoint(p, want)
	require.NoError(t, err)
	golden := goldentest.Compare(t, filepath.Join("testdata", "persisted", "Checkpoint_runStart.json"), written)
	got, err := RestoreCheckpoint(p, golden)
	require.NoError(t, err)
	require.Equal(t, want, got)

	old, err := RestoreCheckpoint(p, bytes.Replace(golden, []byte(`,"startedAt":"2024-07-01T12:00:00.123456Z"`), nil, 1))
	require.NoError(t, err)
	require.Zero(t, old.Run.StartedAt)
}
