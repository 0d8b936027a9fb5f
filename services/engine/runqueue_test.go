package engine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/engine"
)

// An environment allows one concurrent run, under QUEUE. Three runs are
// approved into it and two engines drive them: one starts (whichever
// engine lane gets there first), the others are queued (RunQueued, still
// APPROVED) and start, oldest first, each when the one before it ends. At
// no moment do two of them run at once.
func TestQueuePolicyStartsOneAtATime(t *testing.T) {
	t.Parallel()
	cfg := engine.Config{
		Admission:     admission.Limits{PerEnvironment: map[string]admission.Limit{"q": {MaxConcurrentRuns: 1, Policy: admission.Queue}}},
		QueueInterval: 20 * time.Millisecond,
	}
	s := setup(t, cfg)
	s.runEngine(t, cfg)
	gate := parsePlan(t, `{"planId":"gate","planVersion":"1","steps":[{"id":"g","kind":"waitSignal","signal":"go"}]}`)
	var runs []string
	for range 3 {
		runs = append(runs, s.startIn(t, gate, "q"))
	}
	first := s.waitRunning(t, runs)
	queued := slices.DeleteFunc(slices.Clone(runs), func(id string) bool { return id == first })
	for _, id := range queued {
		s.waitEvent(t, id, events.RunQueued)
	}
	order := []string{first}
	for i := range runs {
		running := s.waitRunning(t, runs)
		if i > 0 {
			require.Equal(t, queued[i-1], running, "queued runs start oldest first")
			order = append(order, running)
		}
		s.signal(t, running, "go", "go-1", `{}`)
		require.Equal(t, events.RunCompleted, terminal(s.waitTerminal(t, running)))
	}
	requireNeverConcurrent(t, s, order)
}

// waitRunning waits until exactly one of runs is started and not ended, and
// returns it.
func (s *stack) waitRunning(t *testing.T, runs []string) string {
	t.Helper()
	var running []string
	require.Eventually(t, func() bool {
		running = running[:0]
		for _, id := range runs {
			evs, err := s.log.EventsFetchAfter(t.Context(), id, 0, 0)
			if err != nil {
				return false
			}
			if slices.ContainsFunc(evs, func(e events.Event) bool { return e.EventType == events.RunStarted }) && terminal(evs) == "" {
				running = append(running, id)
			}
		}
		return len(running) == 1
	}, waitFor, 10*time.Millisecond, "one run is running")
	return running[0]
}

// requireNeverConcurrent checks, from the log, that no run of runs (in the
// order they ran) started before the previous one ended.
func requireNeverConcurrent(t *testing.T, s *stack, runs []string) {
	t.Helper()
	var prevEnd time.Time
	for _, id := range runs {
		evs, err := s.log.EventsFetchAfter(t.Context(), id, 0, 0)
		require.NoError(t, err)
		var started, ended time.Time
		for _, e := range evs {
			if e.EventType == events.RunStarted {
				started = e.PersistedAt
			}
			if terminal([]events.Event{e}) != "" {
				ended = e.PersistedAt
			}
		}
		require.False(t, started.Before(prevEnd), "run %s started before the previous run ended", id)
		prevEnd = ended
	}
}

// Under DELAY a run approved into a full environment starts at once, but
// dispatches its first step only after DelayBy.
func TestDelayPolicyHoldsDispatch(t *testing.T) {
	t.Parallel()
	const delay = 500 * time.Millisecond
	s := setup(t, engine.Config{
		Admission:         admission.Limits{Default: admission.Limit{MaxConcurrentRuns: 1, Policy: admission.Delay, DelayBy: delay}},
		TimerPollInterval: 20 * time.Millisecond,
	})
	rawWorker(t, s.js, "default", echo)
	gate := parsePlan(t, `{"planId":"gate","planVersion":"1","steps":[{"id":"g","kind":"waitSignal","signal":"go"}]}`)
	first := s.startIn(t, gate, "d")
	s.waitEvent(t, first, events.RunStarted)
	second := s.startIn(t, parsePlan(t, `{"planId":"w","planVersion":"1","steps":[{"id":"a","activity":"echo"}]}`), "d")

	evs := s.waitTerminal(t, second)
	require.Equal(t, events.RunCompleted, terminal(evs))
	var started events.RunStartedData
	var startedAt, scheduledAt time.Time
	for _, e := range evs {
		switch e.EventType {
		case events.RunStarted:
			require.NoError(t, e.Data(&started))
			startedAt = e.EmittedAt
		case events.StepScheduled:
			scheduledAt = e.EmittedAt
		default:
		}
	}
	// The log keeps microseconds; the payload's time has the engine's full
	// precision.
	until := started.DelayedUntil.Truncate(time.Microsecond)
	require.Equal(t, startedAt.Add(delay), until, "started at once, with its dispatch delayed")
	require.False(t, scheduledAt.Before(until), "nothing dispatched before the delay")
	s.signal(t, first, "go", "go-1", `{}`)
	require.Equal(t, events.RunCompleted, terminal(s.waitTerminal(t, first)))
}

// An environment's queue starts higher priorities first, first come,
// first served within one, as a key's queue does.
func TestQueuePolicyTakesHigherPrioritiesFirst(t *testing.T) {
	t.Parallel()
	cfg := engine.Config{
		Admission:     admission.Limits{PerEnvironment: map[string]admission.Limit{"q": {MaxConcurrentRuns: 1, Policy: admission.Queue}}},
		QueueInterval: 20 * time.Millisecond,
	}
	s := setup(t, cfg)
	gate := validated(t, parsePlan(t, `{"planId":"gate","planVersion":"1","steps":[{"id":"g","kind":"waitSignal","signal":"go"}]}`))
	start := func(priority int) string {
		return s.approve(t, runstart.Request{Plan: gate, EnvironmentID: "q", Priority: priority})
	}
	head := start(0)
	s.waitRunningSet(t, []string{head}, 1)
	names := map[string]string{}
	var runs []string
	for _, q := range []struct {
		name     string
		priority int
	}{{"p3", 3}, {"p5-first", 5}, {"p1", 1}, {"p5-second", 5}} {
		id := start(q.priority)
		names[id] = q.name
		runs = append(runs, id)
		s.waitEvent(t, id, events.RunQueued)
	}
	s.finish(t, head)
	require.Equal(t, []string{"p5-first", "p5-second", "p3", "p1"}, s.finishInTurn(t, runs, names))
}
