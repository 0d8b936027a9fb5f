package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/worker"
	"github.com/weftrun/weft/services/engine"
)

// calls records the activity calls of a test, by run and step.
type calls struct {
	mu  sync.Mutex
	got []string
}

func (c *calls) add(in worker.Input) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, in.RunID+"/"+in.StepID)
}

func (c *calls) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

// fanOut is a plan of n parallel steps s1..sn of the activity "work".
func fanOut(t *testing.T, id string, n int) string {
	t.Helper()
	steps := ""
	for i := 1; i <= n; i++ {
		if i > 1 {
			steps += ","
		}
		steps += fmt.Sprintf(`{"id":"s%d","activity":"work","timeout":"1h"}`, i)
	}
	return fmt.Sprintf(`{"planId":%q,"planVersion":"1","steps":[%s]}`, id, steps)
}

// startOneSlotWorker starts an SDK worker with one slot whose activity
// records its call and, for the first call of run blockRun, sends the
// step on started and blocks until its context ends; every other call
// completes at once.
func startOneSlotWorker(t *testing.T, s *stack, c *calls, blockRun string, started chan<- string) {
	t.Helper()
	w, err := worker.New(s.nats.JetStream(t), worker.Config{WorkerID: "one-slot", Concurrency: 1, AckWait: 5 * time.Second})
	require.NoError(t, err)
	var blocked sync.Once
	require.NoError(t, w.Register("work", func(ctx context.Context, in worker.Input) (worker.Output, error) {
		c.add(in)
		block := false
		if in.RunID == blockRun {
			blocked.Do(func() { block = true })
		}
		if block {
			started <- in.StepID
			<-ctx.Done()
			return worker.Output{}, ctx.Err()
		}
		return worker.NewOutput(map[string]bool{"ok": true})
	}))
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, w.Stop(ctx))
	})
}

// requireStepsCancelled requires that every step of the run's log ends
// CANCELLED.
func (s *stack) requireStepsCancelled(t *testing.T, runID string, evs []events.Event, n int) {
	t.Helper()
	snap, err := events.Project(runID, evs)
	require.NoError(t, err)
	require.Equal(t, events.RunStatusCancelled, snap.Status)
	require.Len(t, snap.Steps, n)
	for _, st := range snap.Steps {
		require.Equal(t, events.StepStatusCancelled, st.Status, st.StepID)
	}
}

// Issue #17 item 1: tenant A's run has four tasks on a worker with one
// slot, the first running and blocking, three queued behind it with
// tenant B's task; A cancels its run. The running attempt is stopped by
// the notice, A's queued attempts are dropped without their activity ever
// being called, every step of A's run is CANCELLED in the log, and B's
// task runs next.
func TestCancelledRunsQueuedTasksNeverStart(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	c := &calls{}
	started := make(chan string, 1)
	runA := s.start(t, parsePlan(t, fanOut(t, "a", 4)))
	s.waitEvent(t, runA, events.StepScheduled)
	s.requireTasksRelayed(t)
	startOneSlotWorker(t, s, c, runA, started)
	running := <-started // the first of A's tasks (the outbox relays them in no set order)
	runB := s.start(t, parsePlan(t, fanOut(t, "b", 1)))
	s.waitEvent(t, runB, events.StepScheduled)
	s.requireTasksRelayed(t) // B's task is queued behind A's three

	s.signal(t, runA, "CANCEL", "stop", `{}`)
	evsA := s.waitTerminal(t, runA)
	require.Equal(t, events.RunCancelled, terminal(evsA))
	require.Equal(t, events.RunCompleted, terminal(s.waitTerminal(t, runB)))
	s.requireQueued(t, 0)
	require.ElementsMatch(t, []string{runA + "/" + running, runB + "/s1"}, c.list(),
		"A's queued attempts never started; B's did")
	s.requireStepsCancelled(t, runA, s.waitTerminal(t, runA), 4)
}

// A worker that was not running when the run was cancelled, so never
// heard the notice, finds it in WEFT_CANCELS and drops the run's tasks.
func TestCancelNoticeMissedByWorkerStillDrops(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	c := &calls{}
	runA := s.start(t, parsePlan(t, fanOut(t, "a", 3)))
	s.waitEvent(t, runA, events.StepScheduled)
	s.requireTasksRelayed(t)
	s.signal(t, runA, "CANCEL", "stop", `{}`)
	require.Equal(t, events.RunCancelled, terminal(s.waitTerminal(t, runA)))
	subject, err := streams.CancelSubject(runA)
	require.NoError(t, err)
	cancels, err := s.js.Stream(t.Context(), streams.CancelsStream)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := cancels.GetLastMsgForSubject(t.Context(), subject)
		return err == nil
	}, waitFor, 10*time.Millisecond, "the relay published the notice")

	startOneSlotWorker(t, s, c, "", nil)
	runB := s.start(t, parsePlan(t, fanOut(t, "b", 1)))
	require.Equal(t, events.RunCompleted, terminal(s.waitTerminal(t, runB)))
	s.requireQueued(t, 0)
	require.Equal(t, []string{runB + "/s1"}, c.list())
	s.requireStepsCancelled(t, runA, s.waitTerminal(t, runA), 3)
}

// requireTasksRelayed waits until the outbox holds no task: every task
// decided so far is on WEFT_TASKS.
func (s *stack) requireTasksRelayed(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		err := s.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM outbox WHERE subject LIKE 'weft.tasks.%'`).Scan(&n)
		return err == nil && n == 0
	}, waitFor, 10*time.Millisecond, "the outbox relayed every task")
}

// requireQueued waits until WEFT_TASKS holds n tasks.
func (s *stack) requireQueued(t *testing.T, n uint64) {
	t.Helper()
	tasks, err := s.js.Stream(t.Context(), streams.TasksStream)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		info, err := tasks.Info(t.Context())
		return err == nil && info.State.Msgs == n
	}, waitFor, 10*time.Millisecond, "WEFT_TASKS holds %d tasks", n)
}
