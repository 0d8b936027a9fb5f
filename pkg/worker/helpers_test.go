package worker_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/pkg/worker"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// waitFor bounds every wait on asynchronous work in these tests.
const waitFor = 20 * time.Second

// bundle is one test's NATS server, with the streams in place, and a log
// sink shared by its workers.
type bundle struct {
	nats   *weftest.NATS
	js     jetstream.JetStream
	logs   *weftest.Buffer
	logger *slog.Logger
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := setupWithoutStreams(t)
	require.NoError(t, streams.Ensure(t.Context(), b.js, streams.Config{MaxBytes: 64 << 20}))
	return b
}

// setupWithoutStreams is setup before Weft's streams are created.
func setupWithoutStreams(t *testing.T) *bundle {
	t.Helper()
	srv := weftest.NewNATS(t)
	js := srv.JetStream(t)
	logs := &weftest.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return &bundle{nats: srv, js: js, logs: logs, logger: logger}
}

// startWorker builds a worker on js (the bundle's when nil), lets register
// add activities, starts it, and stops it when the test ends.
func (b *bundle) startWorker(t *testing.T, js jetstream.JetStream, cfg worker.Config, register func(*worker.Worker), opts ...worker.Option) *worker.Worker {
	t.Helper()
	if js == nil {
		js = b.js
	}
	if cfg.Logger == nil {
		cfg.Logger = b.logger
	}
	if cfg.StartedAfter == 0 {
		// These tests read the protocol message by message: StepStarted
		// first, before the activity runs. started_test.go covers the
		// default, deferred StepStarted.
		cfg.StartedAfter = -1
	}
	w, err := worker.New(js, cfg, opts...)
	require.NoError(t, err)
	register(w)
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_ = w.Stop(ctx)
	})
	return w
}

// newTask returns a task of activity for a new run, step "build", logical
// attempt 1, on the default queue.
func newTask(activity, input string) task.Task {
	t := task.Task{
		SchemaVersion: task.SchemaVersion, RunID: events.NewRunID(), StepID: "build", LogicalAttemptID: "1",
		PlanVersion: "v1", Activity: activity, Queue: worker.DefaultQueue, TimeoutMillis: 30_000,
		ScheduledAt: time.Now().UTC(),
	}
	if input != "" {
		t.Input = json.RawMessage(input)
	}
	t.IdempotencyKey = "activity-key-" + t.RunID
	return t
}

// publishTask publishes tk as the engine does.
func publishTask(t *testing.T, js jetstream.JetStream, tk task.Task) {
	t.Helper()
	data, err := json.Marshal(tk)
	require.NoError(t, err)
	subject, err := streams.TaskSubject(tk.Queue)
	require.NoError(t, err)
	_, err = js.PublishMsg(t.Context(), &nats.Msg{Subject: subject, Data: data},
		jetstream.WithMsgID(task.DedupeID(tk.RunID, tk.StepID, tk.LogicalAttemptID)))
	require.NoError(t, err)
}

// results reads the results of one run from WEFT_RESULTS, in stream order.
type results struct {
	t    *testing.T
	cons jetstream.Consumer
}

func (b *bundle) results(t *testing.T, runID string) *results {
	t.Helper()
	filter, err := streams.RunResultsFilter(runID)
	require.NoError(t, err)
	cons, err := b.js.OrderedConsumer(t.Context(), streams.ResultsStream,
		jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	require.NoError(t, err)
	return &results{t: t, cons: cons}
}

// next waits for the run's next result and checks it was published with
// its Nats-Msg-Id (task.Result.MsgID).
func (r *results) next() task.Result {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), waitFor)
	defer cancel()
	msg, err := r.cons.Next(jetstream.FetchContext(ctx))
	require.NoError(r.t, err, "no result arrived")
	var res task.Result
	require.NoError(r.t, json.Unmarshal(msg.Data(), &res))
	require.Equal(r.t, res.MsgID(), msg.Headers().Get(jetstream.MsgIDHeader))
	return res
}

// await reads results until the one of kind for step stepID, and returns
// it.
func (r *results) await(stepID string, kind task.Kind) task.Result {
	r.t.Helper()
	for {
		if res := r.next(); res.StepID == stepID && res.Kind == kind {
			return res
		}
	}
}

// final reads results until the first StepCompleted or StepFailed, and
// returns it.
func (r *results) final() task.Result {
	r.t.Helper()
	for {
		if res := r.next(); res.Kind != task.Started {
			return res
		}
	}
}

// requireResult checks that r is tk's result of kind from delivery attempt.
func requireResult(t *testing.T, tk task.Task, kind task.Kind, attempt string, r task.Result) {
	t.Helper()
	require.Equal(t, kind, r.Kind)
	require.Equal(t, tk.RunID, r.RunID)
	require.Equal(t, tk.StepID, r.StepID)
	require.Equal(t, tk.LogicalAttemptID, r.LogicalAttemptID)
	require.Equal(t, attempt, r.EngineAttemptID)
	require.Equal(t, events.IdempotencyKey(tk.RunID, tk.StepID, tk.LogicalAttemptID, events.Type(kind), tk.PlanVersion),
		r.IdempotencyKey)
	require.Equal(t, task.SchemaVersion, r.SchemaVersion)
	require.False(t, r.EmittedAt.IsZero())
	require.False(t, r.StartedAt.IsZero(), "every result says when its attempt began")
	require.False(t, r.StartedAt.After(r.EmittedAt), "an attempt begins before what it reports")
}

// requireFailed checks that r is tk's StepFailed with code and retryable.
func requireFailed(t *testing.T, tk task.Task, r task.Result, code string, retryable bool) {
	t.Helper()
	requireResult(t, tk, task.Failed, "1", r)
	require.NotNil(t, r.Error)
	require.Equal(t, code, r.Error.Code, r.Error.Message)
	require.Equal(t, retryable, r.Error.Retryable, code)
	require.NotEmpty(t, r.Error.Category)
	require.Empty(t, r.Output)
}

// requireTasksSettled waits until the queue's consumer holds no task,
// delivered or not, and the work-queue stream is empty: every task acked
// or terminated.
func (b *bundle) requireTasksSettled(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		cons, err := b.js.Consumer(t.Context(), streams.TasksStream, "tasks-"+worker.DefaultQueue)
		if err != nil {
			return false
		}
		info, err := cons.Info(t.Context())
		if err != nil || info.NumAckPending != 0 || info.NumPending != 0 {
			return false
		}
		s, err := b.js.Stream(t.Context(), streams.TasksStream)
		if err != nil {
			return false
		}
		sinfo, err := s.Info(t.Context())
		return err == nil && sinfo.State.Msgs == 0
	}, waitFor, 10*time.Millisecond)
}

// allResults returns the raw bytes of every message in WEFT_RESULTS.
func (b *bundle) allResults(t *testing.T) string {
	t.Helper()
	s, err := b.js.Stream(t.Context(), streams.ResultsStream)
	require.NoError(t, err)
	info, err := s.Info(t.Context())
	require.NoError(t, err)
	var all strings.Builder
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(t.Context(), seq)
		require.NoError(t, err)
		all.Write(m.Data)
		all.WriteByte('\n')
	}
	return all.String()
}

// gate is an activity that reports each call on started and then blocks
// until it receives from release (a send releases one call, a close all of
// them), completing with {"done": true}, or until its context ends
// (returning ctx.Err()).
type gate struct {
	started chan worker.Input
	release chan struct{}
}

func newGate() *gate {
	return &gate{started: make(chan worker.Input, 16), release: make(chan struct{})}
}

func (g *gate) run(ctx context.Context, in worker.Input) (worker.Output, error) {
	g.started <- in
	select {
	case <-g.release:
		return worker.NewOutput(map[string]bool{"done": true})
	case <-ctx.Done():
		return worker.Output{}, ctx.Err()
	}
}

// awaitStart waits for the gate's next call.
func (g *gate) awaitStart(t *testing.T) worker.Input {
	t.Helper()
	select {
	case in := <-g.started:
		return in
	case <-time.After(waitFor):
		require.FailNow(t, "the activity did not start")
		return worker.Input{}
	}
}
