package engine_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine"
)

// sweepConfig sweeps often and gives up on quiet tasks quickly.
var sweepConfig = engine.Config{
	SweepInterval: 50 * time.Millisecond,
	StallAfter:    200 * time.Millisecond,
	TaskGrace:     300 * time.Millisecond,
}

// The RunApproved never reaches the bus (appended to the log without its
// outbox row, as if JetStream lost it): the sweep starts the run.
func TestSweepStartsRunTheBusLost(t *testing.T) {
	t.Parallel()
	s := setup(t, sweepConfig)
	rawWorker(t, s.js, "default", echo)
	runID := s.startSilently(t, parsePlan(t, `{"planId":"lost","planVersion":"1","steps":[{"id":"a","activity":"echo"}]}`))
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	requireOncePerAttempt(t, evs)
}

// A worker takes the first task of each attempt and drops it (acked, no
// result), and another drops the final result after reporting a start:
// the sweep sends each lost task again under the same logical attempt.
func TestSweepResendsLostTasks(t *testing.T) {
	t.Parallel()
	s := setup(t, sweepConfig)
	var seen atomic.Int32
	rawWorkerFn(t, s.js, "default", func(tk task.Task, report func(task.Result)) {
		switch seen.Add(1) {
		case 1: // lost before it started
		case 2: // lost after it started
			report(task.NewResult(tk, task.Started, "", "raw"))
		default:
			report(task.NewResult(tk, task.Started, "", "raw"))
			report(echo(tk))
		}
	})
	runID := s.start(t, parsePlan(t, `{"planId":"lossy","planVersion":"1","steps":[
		{"id":"a","activity":"echo","timeout":"1s"},
		{"id":"b","activity":"echo","timeout":"1s","dependsOn":["a"]}]}`))
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	requireOncePerAttempt(t, evs)
	for _, ev := range evs {
		if ev.StepID != "" {
			require.Equal(t, "1", ev.LogicalAttemptID, "a resend is the same logical attempt")
		}
	}
	require.GreaterOrEqual(t, seen.Load(), int32(4), "a and b each ran once more after a loss")
}

// A signal accepted while the bus lost its message is applied by the sweep.
func TestSweepAppliesSignalTheBusLost(t *testing.T) {
	t.Parallel()
	s := setup(t, sweepConfig)
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, parsePlan(t, `{"planId":"g","planVersion":"1","steps":[
		{"id":"gate","kind":"waitSignal","signal":"go"},
		{"id":"after","activity":"echo","dependsOn":["gate"]}]}`))
	s.waitEvent(t, runID, events.RunStarted)
	ev, err := events.New(events.Spec{RunID: runID, Type: events.SignalAccepted, LogicalAttemptID: "sig-1", PlanVersion: "1",
		Data: events.SignalAcceptedData{SignalName: "go", SignalID: "sig-1"}})
	require.NoError(t, err)
	_, err = eventlogtest.AppendLog(t.Context(), s.log, s.db.Pool, nil, ev) // the log only: no outbox row
	require.NoError(t, err)
	require.Equal(t, events.SignalOutcomeApplied, s.waitApplied(t, runID, "sig-1").Outcome)
	require.Equal(t, events.RunCompleted, terminal(s.waitTerminal(t, runID)))
}

// A task message is deleted from WEFT_TASKS before any worker takes it: the
// sweep sends it again once it has not started within its timeout, and the
// run completes.
func TestSweepResendsTaskDeletedFromStream(t *testing.T) {
	t.Parallel()
	s := setup(t, sweepConfig)
	runID := s.start(t, parsePlan(t, `{"planId":"del","planVersion":"1","steps":[{"id":"a","activity":"echo","timeout":"1s"}]}`))
	s.waitEvent(t, runID, events.StepScheduled)
	tasks, err := s.js.Stream(t.Context(), streams.TasksStream)
	require.NoError(t, err)
	var seq uint64
	require.Eventually(t, func() bool {
		info, err := tasks.Info(t.Context())
		require.NoError(t, err)
		seq = info.State.LastSeq
		return info.State.Msgs == 1
	}, waitFor, 10*time.Millisecond, "the task reaches the stream")
	require.NoError(t, tasks.DeleteMsg(t.Context(), seq))

	rawWorker(t, s.js, "default", echo)
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	requireOncePerAttempt(t, evs)
}

// TestSweepReachesANewlyStalledRun keeps the sweep busy with more quiet runs
// (each waits for a signal) than it can sweep per StallAfter, one run per
// sweep: a run whose RunApproved the bus lost, stalled after all of them,
// is still started at once rather than waiting behind them for good.
func TestSweepReachesANewlyStalledRun(t *testing.T) {
	t.Parallel()
	cfg := sweepConfig
	cfg.SweepBatch = 1 // 1 run per 50 ms: 4 per StallAfter, for 10 quiet runs
	s := setup(t, cfg)
	rawWorker(t, s.js, "default", echo)
	quiet := parsePlan(t, `{"planId":"quiet","planVersion":"1","steps":[{"id":"gate","kind":"waitSignal","signal":"go"}]}`)
	for range 10 {
		s.waitEvent(t, s.start(t, quiet), events.StepScheduled)
	}
	runID := s.startSilently(t, parsePlan(t, `{"planId":"lost","planVersion":"1","steps":[{"id":"a","activity":"echo"}]}`))
	require.Equal(t, events.RunCompleted, terminal(s.waitTerminal(t, runID)))
}
