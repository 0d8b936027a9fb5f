package engine_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine"
)

// testTaskKeys are the task keys of the tests' engines: every engine of a
// test holds the same ones, as the engines of a deployment do.
var testTaskKeys = signer(bytes.Repeat([]byte("test-task-key/"), 3))

func signer(current []byte, previous ...[]byte) *task.Signer {
	s, err := task.NewSigner(current, previous...)
	if err != nil {
		panic(err)
	}
	return s
}

// lookupToken is the token of operation op of runID, as its task carries it.
func lookupToken(runID, op string) string {
	step, attempt, _ := task.StepOfOperation(op)
	return testTaskKeys.Sign(runID, step, attempt)
}

// syncBuffer is a log sink safe for the engine's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// fetchTask takes one task of queue, as a worker of that queue does.
func fetchTask(t *testing.T, js jetstream.JetStream, queue string) task.Task {
	t.Helper()
	cc, err := streams.TaskConsumer(queue, time.Minute)
	require.NoError(t, err)
	cons, err := js.CreateOrUpdateConsumer(t.Context(), streams.TasksStream, cc)
	require.NoError(t, err)
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(waitFor))
	require.NoError(t, err)
	m, ok := <-batch.Messages()
	require.True(t, ok, "a task of queue %s arrived", queue)
	var tk task.Task
	require.NoError(t, json.Unmarshal(m.Data(), &tk))
	return tk
}

// Issue #17, item 3: a worker credential can publish on weft.results.* for
// any run. An attacker serving its own queue forges the completion of
// another tenant's step, in flight on a queue it does not serve: without a
// token, with the token of its own run's task, with the token of another
// attempt of the victim's step, and with a token of a key that is not the
// engine's. None is appended; each is counted and logged with the run and
// step it claimed. The victim's real worker then completes the step with
// its own output.
func TestForgedResultsDoNoHarm(t *testing.T) {
	t.Parallel()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	s := newStack(t)
	logs := &syncBuffer{}
	s.logger = slog.New(slog.NewTextHandler(logs, nil))
	s.runEngine(t, engine.Config{MeterProvider: mp})

	attacker := s.start(t, parsePlan(t, `{"planId":"mine","planVersion":"1","steps":[
		{"id":"a","activity":"echo","queue":"attacker"}]}`))
	victim := s.start(t, parsePlan(t, `{"planId":"theirs","planVersion":"1","steps":[
		{"id":"a","activity":"echo","queue":"victim","input":{"genuine":true}}]}`))
	own := fetchTask(t, s.js, "attacker")
	require.Equal(t, attacker, own.RunID)
	require.NotEmpty(t, own.Token, "the engine signs every task")
	s.waitEvent(t, victim, events.StepScheduled)

	forge := func(token string) task.Result {
		r := task.NewResult(task.Task{RunID: victim, StepID: "a", LogicalAttemptID: "1", PlanVersion: "1"},
			task.Completed, "1", "forger")
		r.Output, r.Token = json.RawMessage(`{"forged":true}`), token
		return r
	}
	for i, token := range []string{
		"",                                  // no token
		own.Token,                           // the attacker's own task's token, replayed on the victim's run
		testTaskKeys.Sign(victim, "a", "2"), // the token of another attempt
		signer(bytes.Repeat([]byte{7}, task.MinTaskKeyBytes)).Sign(victim, "a", "1"), // a key not the engine's
	} {
		r := forge(token)
		publishResultAs(t, s.js, r, r.IdempotencyKey+"/"+string(rune('a'+i))) // past the bus's dedupe
	}
	metricstest.WaitFor(t, h, waitFor, func(sc metricstest.Scrape) bool {
		missing, _ := sc.Sum("weft_engine_results_forged_total", map[string]string{"reason": "missing"})
		invalid, _ := sc.Sum("weft_engine_results_forged_total", map[string]string{"reason": "invalid"})
		return missing == 1 && invalid == 3
	})
	evs, err := s.log.EventsFetchAfter(t.Context(), victim, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []events.Type{events.RunApproved, events.RunStarted, events.StepScheduled}, types(evs),
		"no forged result reached the victim's log")
	logged := logs.String()
	require.Contains(t, logged, "result without its task's token dropped")
	require.Contains(t, logged, "run_id="+victim)
	require.Contains(t, logged, "step_id=a")
	require.Contains(t, logged, "reason=missing")
	require.Contains(t, logged, "reason=invalid")

	rawWorker(t, s.js, "victim", echo)
	evs = s.waitTerminal(t, victim)
	require.Equal(t, events.RunCompleted, terminal(evs))
	var completed []events.StepCompletedData
	for _, ev := range evs {
		if ev.EventType == events.StepCompleted {
			var d events.StepCompletedData
			require.NoError(t, ev.Data(&d))
			completed = append(completed, d)
		}
	}
	require.Len(t, completed, 1)
	require.JSONEq(t, `{"genuine":true}`, string(completed[0].Output), "the step completed with its worker's output")
}

// A reconciliation lookup is answered only with its task's token: without
// one, or with the token of another run or operation, the engine reads
// nothing and answers an error (which a worker treats as unavailable,
// never as "no record"), counted and logged.
func TestLookupNeedsItsTaskToken(t *testing.T) {
	t.Parallel()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	s := setup(t, engine.Config{MeterProvider: mp})
	runID := s.start(t, parsePlan(t, payPlan(t, planKey)))
	other := s.start(t, parsePlan(t, payPlan(t, planKey)))
	rec := storeRecord(runID, "pay#1", "order-42", task.StatusCompleted, time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	s.insertRecords(t, rec)
	ask := func(token string) task.ReconcileReply {
		t.Helper()
		b, err := json.Marshal(task.ReconcileRequest{SchemaVersion: 1, RunID: runID, ActivityName: "charge",
			OperationID: "pay#1", IdempotencyKey: "order-42", Token: token})
		require.NoError(t, err)
		m, err := s.nats.Conn(t).RequestWithContext(t.Context(), streams.ReconcileSubject, b)
		require.NoError(t, err)
		var reply task.ReconcileReply
		require.NoError(t, json.Unmarshal(m.Data, &reply))
		return reply
	}
	for _, token := range []string{"", lookupToken(other, "pay#1"), lookupToken(runID, "pay#2"), "v1.garbage"} {
		reply := ask(token)
		require.True(t, strings.HasPrefix(reply.Error, engine.ErrLookupToken), "token %q: %q", token, reply.Error)
		require.Nil(t, reply.Record, "token %q", token)
		require.Nil(t, reply.Prior, "token %q", token)
		require.Nil(t, reply.Started, "token %q", token)
	}
	found := ask(lookupToken(runID, "pay#1"))
	require.Empty(t, found.Error)
	require.Equal(t, &rec, found.Record)

	sc := metricstest.Get(t, h)
	require.Equal(t, int64(1), sc.Count(t, "weft_engine_lookups_forged_total", map[string]string{"reason": "missing"}))
	require.Equal(t, int64(3), sc.Count(t, "weft_engine_lookups_forged_total", map[string]string{"reason": "invalid"}))
}

// Key rotation: an engine that took a new key and keeps the old one as a
// previous key accepts the results of a task an engine with the old key
// signed (a task in flight across the rotation), and signs its own tasks
// with the new key.
func TestTaskKeyRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	s := newStack(t)
	stopOld := s.startEngine(t, engine.Config{TaskKeys: signer(oldKey)})
	runID := s.start(t, parsePlan(t, `{"planId":"rot","planVersion":"1","steps":[
		{"id":"a","activity":"echo"},{"id":"b","activity":"echo","dependsOn":["a"]}]}`))
	tk := fetchTask(t, s.js, "default")
	require.True(t, signer(oldKey).Verify(tk.Token, runID, "a", "1"))
	stopOld()

	s.startEngine(t, engine.Config{TaskKeys: signer(newKey, oldKey)})
	publishResult(t, s.js, task.NewResult(tk, task.Started, "1", "raw"))
	publishResult(t, s.js, echo(tk))
	s.waitEvent(t, runID, events.StepCompleted)
	next := fetchTask(t, s.js, "default")
	require.Equal(t, "b", next.StepID)
	require.True(t, signer(newKey).Verify(next.Token, runID, "b", "1"), "the rotated engine signs with the new key")
	require.False(t, signer(oldKey).Verify(next.Token, runID, "b", "1"))
}
