package engine_test

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/runstart"
	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/outbox"
	"github.com/weftrun/weft/pkg/outbox/outboxtest"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/engine"
)

// TestMain runs the tests, or, in a crash test's child process, its engine.
func TestMain(m *testing.M) { weftest.MainWithChild(m, childDBEnv, crashChild) }

const waitFor = 30 * time.Second

// stack is one test's Postgres, JetStream, outbox relay and engine.
type stack struct {
	db *weftest.DB
	// nats is the one server of the stack's bus, nil on a cluster.
	nats *weftest.NATS
	// bus is the stack's bus: nats, or a cluster (newClusterStack).
	bus bus
	js  jetstream.JetStream
	log *eventlog.Store
	// logger, if set before runEngine, receives the engines' logs.
	logger *slog.Logger
}

// setup starts a stack with an engine.
func setup(t *testing.T, cfg engine.Config) *stack {
	t.Helper()
	s := newStack(t)
	s.runEngine(t, cfg)
	return s
}

// bus is a JetStream server or cluster of the test harness.
type bus interface {
	Conn(testing.TB) *nats.Conn
	JetStream(testing.TB) jetstream.JetStream
}

// newStack starts Postgres, JetStream and the outbox relay, without an
// engine.
func newStack(t *testing.T) *stack {
	t.Helper()
	n := weftest.NewNATS(t)
	s := newStackOn(t, n, streams.Config{MaxBytes: 256 << 20})
	s.nats = n
	return s
}

// newStackOn is newStack on bus b, whose streams it makes as cfg says.
func newStackOn(t *testing.T, b bus, cfg streams.Config) *stack {
	t.Helper()
	s := &stack{db: weftest.NewDB(t), bus: b}
	s.js = b.JetStream(t)
	s.log = eventlog.New(s.db.Pool)
	require.NoError(t, streams.Ensure(t.Context(), s.js, cfg))

	outboxtest.StartRelay(t, s.db.Pool, b.JetStream(t), outbox.RelayConfig{PollInterval: 100 * time.Millisecond})
	return s
}

// runEngine runs an engine in this process until the test ends.
func (s *stack) runEngine(t *testing.T, cfg engine.Config) {
	t.Helper()
	cfg.TaskKeys = cmp.Or(cfg.TaskKeys, testTaskKeys)
	cfg.Logger = cmp.Or(cfg.Logger, s.logger)
	eng, err := engine.New(s.db.Pool, s.bus.Conn(t), cfg)
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(runCtx) }()
	t.Cleanup(func() { stop(); require.NoError(t, <-done) })
}

// start approves a run of p and returns its id.
func (s *stack) start(t *testing.T, p *plan.Plan) string {
	t.Helper()
	return s.startIn(t, p, "")
}

// startIn approves a run of p in environment env.
func (s *stack) startIn(t *testing.T, p *plan.Plan, env string) string {
	t.Helper()
	return s.approve(t, runstart.Request{Plan: validated(t, p), EnvironmentID: env})
}

// approve approves the run req asks for and returns its id.
func (s *stack) approve(t *testing.T, req runstart.Request) string {
	t.Helper()
	var runID string
	err := pgx.BeginFunc(t.Context(), s.db.Pool, func(tx pgx.Tx) error {
		var err error
		runID, err = runstart.Approver{Journal: journal.New(s.log)}.ApproveTx(t.Context(), tx, req)
		return err
	})
	require.NoError(t, err)
	return runID
}

// startSilently approves a run of p in the log and the engine's run
// registry but writes no outbox row: the bus never hears of the run.
func (s *stack) startSilently(t *testing.T, p *plan.Plan) string {
	t.Helper()
	p.ApplyDefaults()
	planJSON, err := json.Marshal(p)
	require.NoError(t, err)
	runID := events.NewRunID()
	ev, err := events.New(events.Spec{RunID: runID, Type: events.RunApproved, PlanVersion: p.PlanVersion,
		Data: events.RunApprovedData{PlanID: p.PlanID, PlanVersion: p.PlanVersion, Plan: planJSON}})
	require.NoError(t, err)
	_, err = eventlogtest.AppendLog(t.Context(), s.log, s.db.Pool, nil, ev)
	require.NoError(t, err)
	_, err = s.db.Pool.Exec(t.Context(), `INSERT INTO engine_runs (run_id) VALUES ($1)`, runID)
	require.NoError(t, err)
	return runID
}

// waitTerminal waits until the run's log ends in a terminal run event and
// returns the log.
func (s *stack) waitTerminal(t *testing.T, runID string) []events.Event {
	t.Helper()
	var evs []events.Event
	require.Eventually(t, func() bool {
		got, err := s.log.EventsFetchAfter(t.Context(), runID, 0, 0)
		if err != nil { // a connection a test terminated: try again
			return false
		}
		evs = got
		return terminal(evs) != ""
	}, waitFor, 10*time.Millisecond, "run %s reaches a terminal state; log: %v", runID, lazyTypes{&evs})
	return evs
}

// terminal returns the run's terminal event type, or "" while it has none.
func terminal(evs []events.Event) events.Type {
	for _, ev := range evs {
		if ev.EventType == events.RunCompleted || ev.EventType == events.RunFailed || ev.EventType == events.RunCancelled {
			return ev.EventType
		}
	}
	return ""
}

// rawWorker serves queue with the wire protocol alone (no SDK): for each
// task it reports StepStarted, then what behave returns, then acks.
func rawWorker(t *testing.T, js jetstream.JetStream, queue string, behave func(task.Task) task.Result) {
	t.Helper()
	rawWorkerFn(t, js, queue, func(tk task.Task, report func(task.Result)) {
		report(task.NewResult(tk, task.Started, "", "raw"))
		report(behave(tk))
	})
}

// rawWorkerFn serves queue, letting serve report whatever it likes for each
// task (stamped with the delivery count), then acks the task.
func rawWorkerFn(t *testing.T, js jetstream.JetStream, queue string, serve func(tk task.Task, report func(task.Result))) {
	t.Helper()
	cc, err := streams.TaskConsumer(queue, 0)
	require.NoError(t, err)
	rawWorkerOn(t, js, streams.TasksStream, cc, serve)
}

// rawWorkerOn is rawWorkerFn on the task consumer cc of stream: a queue's
// own on WEFT_TASKS, or one of its tenant lanes on the queue's lanes
// stream (streams.TaskLaneConsumer, streams.TaskLanesStream).
func rawWorkerOn(t *testing.T, js jetstream.JetStream, stream string, cc jetstream.ConsumerConfig, serve func(tk task.Task, report func(task.Result))) {
	t.Helper()
	ctx := t.Context()
	cons, err := js.CreateOrUpdateConsumer(ctx, stream, cc)
	require.NoError(t, err)
	sub, err := cons.Consume(func(m jetstream.Msg) {
		var tk task.Task
		require.NoError(t, json.Unmarshal(m.Data(), &tk))
		md, err := m.Metadata()
		require.NoError(t, err)
		attempt := strconv.FormatUint(md.NumDelivered, 10)
		var unpublished error
		serve(tk, func(res task.Result) {
			if unpublished == nil {
				res.EngineAttemptID = attempt
				unpublished = resultPublish(js, res, res.IdempotencyKey)
			}
		})
		if unpublished != nil {
			// As a worker does (docs/worker-protocol.md): a result the bus
			// did not take (NATS restarting) gives the task back.
			t.Logf("raw worker: result not published, task given back: %v", unpublished)
			_ = m.Nak()
			return
		}
		if err := m.Ack(); err != nil {
			t.Logf("raw worker: ack failed, the task comes back: %v", err)
		}
	})
	require.NoError(t, err)
	t.Cleanup(sub.Stop)
}

func publishResult(t *testing.T, js jetstream.JetStream, r task.Result) {
	publishResultAs(t, js, r, r.IdempotencyKey)
}

// publishResultAs publishes r with msgID as its Nats-Msg-Id.
func publishResultAs(t *testing.T, js jetstream.JetStream, r task.Result, msgID string) {
	require.NoError(t, resultPublish(js, r, msgID))
}

// resultPublish publishes r with msgID as its Nats-Msg-Id and waits for
// its PubAck.
func resultPublish(js jetstream.JetStream, r task.Result, msgID string) error {
	subject, err := streams.ResultSubject(r.RunID)
	if err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = js.Publish(context.Background(), subject, b, jetstream.WithMsgID(msgID))
	return err
}

func echo(tk task.Task) task.Result {
	r := task.NewResult(tk, task.Completed, "", "raw")
	r.Output = tk.Input
	return r
}

func parsePlan(t *testing.T, doc string) *plan.Plan {
	t.Helper()
	p, err := plan.Parse([]byte(doc), plan.Limits{})
	require.NoError(t, err)
	return p
}

// validated is p with its defaults, validated for a start.
func validated(t *testing.T, p *plan.Plan) plan.Validated {
	t.Helper()
	v, err := p.Validated(plan.Limits{})
	require.NoError(t, err)
	return v
}

func types(evs []events.Event) []events.Type {
	out := make([]events.Type, len(evs))
	for i, ev := range evs {
		out[i] = ev.EventType
	}
	return out
}

func TestLinearPlanRunsToCompletion(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, parsePlan(t, `{"planId":"linear","planVersion":"1","steps":[
		{"id":"a","activity":"echo","input":{"n":1}},
		{"id":"b","activity":"echo","dependsOn":["a"]},
		{"id":"c","activity":"echo","dependsOn":["b"]}]}`))

	evs := s.waitTerminal(t, runID)
	require.Equal(t, []events.Type{
		events.RunApproved, events.RunStarted,
		events.StepScheduled, events.StepStarted, events.StepCompleted,
		events.StepScheduled, events.StepStarted, events.StepCompleted,
		events.StepScheduled, events.StepStarted, events.StepCompleted,
		events.RunCompleted,
	}, types(evs))
	snap, err := events.Project(runID, evs)
	require.NoError(t, err)
	require.Equal(t, events.RunStatusCompleted, snap.Status)
	for _, st := range snap.Steps {
		require.Equal(t, events.StepStatusSuccess, st.Status, st.StepID)
	}
}

func TestFanOutRunsStepsInParallel(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, parsePlan(t, `{"planId":"fan","planVersion":"1","steps":[
		{"id":"root","activity":"echo"},
		{"id":"x","activity":"echo","dependsOn":["root"]},
		{"id":"y","activity":"echo","dependsOn":["root"]},
		{"id":"z","activity":"echo","dependsOn":["root"]},
		{"id":"join","activity":"echo","dependsOn":["x","y","z"]}]}`))

	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	// x, y and z are scheduled by the same round: before any of them starts.
	var scheduled []string
	for _, ev := range evs {
		if ev.EventType == events.StepStarted && ev.StepID != "root" {
			break
		}
		if ev.EventType == events.StepScheduled {
			scheduled = append(scheduled, ev.StepID)
		}
	}
	require.ElementsMatch(t, []string{"root", "x", "y", "z"}, scheduled)
}

// A step that fails retryably is retried, after a durable backoff timer,
// as a new logical attempt, and then succeeds.
func TestRetryThenSucceed(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{TimerPollInterval: 20 * time.Millisecond})
	rawWorker(t, s.js, "default", func(tk task.Task) task.Result {
		if tk.LogicalAttemptID == "1" {
			r := task.NewResult(tk, task.Failed, "", "raw")
			r.Error = &events.StepError{Code: "FLAKY", Message: "try again", Retryable: true}
			return r
		}
		return echo(tk)
	})
	runID := s.start(t, parsePlan(t, `{"planId":"retry","planVersion":"1","steps":[
		{"id":"flaky","activity":"x","retry":{"maxAttempts":3,"initialBackoff":"10ms","maxBackoff":"10ms"}}]}`))

	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	var attempts []string
	for _, ev := range evs {
		if ev.EventType == events.StepScheduled {
			attempts = append(attempts, ev.LogicalAttemptID)
		}
	}
	require.Equal(t, []string{"1", "2"}, attempts, "the retry is logical attempt 2")
	require.Contains(t, types(evs), events.StepRetryScheduled)
}

// A step that fails for good skips its dependants and fails the run.
func TestFailureSkipsDependantsAndFailsRun(t *testing.T) {
	t.Parallel()
	s := setup(t, engine.Config{})
	rawWorker(t, s.js, "default", failOn("bad", "BAD_INPUT"))
	runID := s.start(t, parsePlan(t, `{"planId":"fail","planVersion":"1","steps":[
		{"id":"bad","activity":"x"},
		{"id":"after","activity":"x","dependsOn":["bad"]},
		{"id":"later","activity":"x","dependsOn":["after"]}]}`))

	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunFailed, terminal(evs))
	require.Equal(t, map[string]events.StepStatus{
		"bad": events.StepStatusFailed, "after": events.StepStatusSkipped, "later": events.StepStatusSkipped,
	}, stepStatuses(t, runID, evs))
}

// failOn is a raw worker's behaviour: step fails for good with code, every
// other step echoes its input.
func failOn(step, code string) func(task.Task) task.Result {
	return func(tk task.Task) task.Result {
		if tk.StepID != step {
			return echo(tk)
		}
		r := task.NewResult(tk, task.Failed, "", "raw")
		r.Error = &events.StepError{Code: code, Message: "no", Retryable: false}
		return r
	}
}

// stepStatuses returns the status of each step of the run's log.
func stepStatuses(t *testing.T, runID string, evs []events.Event) map[string]events.StepStatus {
	t.Helper()
	snap, err := events.Project(runID, evs)
	require.NoError(t, err)
	status := map[string]events.StepStatus{}
	for _, st := range snap.Steps {
		status[st.StepID] = st.Status
	}
	return status
}
