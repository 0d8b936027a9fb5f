package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/startstop"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

func echo(_ context.Context, in worker.Input) (worker.Output, error) {
	return worker.Output{JSON: in.JSON}, nil
}

func TestTaskCompletes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inputs := make(chan worker.Input, 1)
	b.startWorker(t, nil, worker.Config{WorkerID: "test-worker"}, func(w *worker.Worker) {
		require.NoError(t, w.Register("echo", func(ctx context.Context, in worker.Input) (worker.Output, error) {
			inputs <- in
			return echo(ctx, in)
		}))
	})
	tk := newTask("echo", `{"message": "hi"}`)
	results := b.results(t, tk.RunID)
	publishTask(t, b.js, tk)

	started := results.next()
	requireResult(t, tk, task.Started, "1", started)
	require.Equal(t, "test-worker", started.WorkerID)
	require.Empty(t, started.Output)
	completed := results.next()
	requireResult(t, tk, task.Completed, "1", completed)
	require.JSONEq(t, `{"message":"hi"}`, string(completed.Output))
	require.Nil(t, completed.Error)
	b.requireTasksSettled(t)

	in := <-inputs
	require.Equal(t, tk.IdempotencyKey, in.IdempotencyKey)
	require.Equal(t, tk.RunID, in.RunID)
	require.Equal(t, "build", in.StepID)
	require.Equal(t, "1", in.LogicalAttemptID)
	require.Equal(t, "1", in.EngineAttemptID)
	require.Equal(t, "v1", in.PlanVersion)
	require.Equal(t, "echo", in.Activity)
	var decoded struct{ Message string }
	require.NoError(t, in.Decode(&decoded))
	require.Equal(t, "hi", decoded.Message)
	require.NotContains(t, b.logs.String(), `"hi"`, "the worker never logs a task's input")
}

func TestStopDrainsRunningTasks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate()
	w := b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("gate", g.run))
	})
	tk := newTask("gate", "")
	results := b.results(t, tk.RunID)
	publishTask(t, b.js, tk)
	g.awaitStart(t)

	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	close(g.release)
	require.NoError(t, <-stopped, "Stop waits for the running task, which finishes")
	requireResult(t, tk, task.Started, "1", results.next())
	requireResult(t, tk, task.Completed, "1", results.next())
	b.requireTasksSettled(t)

	require.NoError(t, w.Stop(context.Background()), "Stop is idempotent")
	require.ErrorIs(t, w.Start(context.Background()), startstop.ErrAlreadyStarted)
}

func TestStopBeforeStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := worker.New(b.js, worker.Config{})
	require.NoError(t, err)
	require.NoError(t, w.Stop(context.Background()))
}

// A start whose context ends before the task consumer exists fails, and
// the worker then stops as a no-op. (With a live context it starts and
// waits for the consumer: TestWorkerStartsWhileItsConsumerCannotBeCreated.)
func TestStartFailsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.js.DeleteStream(t.Context(), "WEFT_TASKS"))
	w, err := worker.New(b.js, worker.Config{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.Error(t, w.Start(ctx))
	require.NoError(t, w.Stop(t.Context()), "a worker that failed to start stops as a no-op")
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, cfg := range map[string]worker.Config{
		"queue with a dot":  {Queue: "a.b"},
		"wildcard queue":    {Queue: "*"},
		"negative slots":    {Concurrency: -1},
		"short ack wait":    {AckWait: 10 * time.Millisecond},
		"negative output":   {MaxOutputBytes: -1},
		"output over limit": {MaxOutputBytes: 64 << 20},
		"negative publish":  {PublishTimeout: -time.Second},
		"negative delay":    {RedeliveryDelay: -time.Second},
	} {
		_, err := worker.New(b.js, cfg)
		require.ErrorIs(t, err, worker.ErrInvalidConfig, name)
	}
	_, err := worker.New(nil, worker.Config{})
	require.ErrorIs(t, err, worker.ErrInvalidConfig)
	_, err = worker.New(b.js, worker.Config{}, worker.WithSecretsProvider("env", nil))
	require.ErrorIs(t, err, worker.ErrInvalidConfig)
	_, err = worker.New(b.js, worker.Config{},
		worker.WithSecretsProvider("env", worker.EnvSecrets{}), worker.WithSecretsProvider("env", worker.EnvSecrets{}))
	require.ErrorIs(t, err, worker.ErrInvalidConfig, "a provider name is registered once")

	w, err := worker.New(b.js, worker.Config{})
	require.NoError(t, err)
	require.NoError(t, w.Register("echo", echo))
	require.ErrorIs(t, w.Register("echo", echo), worker.ErrInvalidConfig, "a name is registered once")
	require.ErrorIs(t, w.Register("", echo), worker.ErrInvalidConfig)
	require.ErrorIs(t, w.Register("nil", nil), worker.ErrInvalidConfig)
	require.ErrorIs(t, w.Register("t", echo, worker.WithTimeout(0)), worker.ErrInvalidConfig)
	require.ErrorIs(t, w.Register("h", echo, worker.WithHeartbeat(-time.Second)), worker.ErrInvalidConfig)
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	cfg := worker.Config{}.WithDefaults()
	require.Equal(t, "default", cfg.Queue)
	require.Equal(t, worker.DefaultConcurrency, cfg.Concurrency)
	require.Equal(t, 30*time.Second, cfg.AckWait)
	require.Equal(t, worker.DefaultMaxOutputBytes, cfg.MaxOutputBytes)
	require.Contains(t, cfg.WorkerID, "/", "host/pid")
	require.NotNil(t, cfg.Logger)
}

// WithIdempotencyKey derives the activity's key from its input: the same
// order gets the same key in any run; a key that cannot be derived fails
// the step, not retryably, before the activity runs.
func TestActivityIdempotencyKeyFromInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	keys := make(chan string, 2)
	byOrder := worker.WithIdempotencyKey(func(in worker.Input) (string, error) {
		var req struct {
			OrderID string `json:"orderId"`
		}
		if err := in.Decode(&req); err != nil || req.OrderID == "" {
			return "", err // no order, no key
		}
		return "order/" + req.OrderID, nil
	})
	b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("charge", func(_ context.Context, in worker.Input) (worker.Output, error) {
			keys <- in.IdempotencyKey
			return worker.Output{}, nil
		}, byOrder))
	})
	for _, input := range []string{`{"orderId":"42"}`, `{"orderId":""}`} {
		tk := newTask("charge", input)
		results := b.results(t, tk.RunID)
		publishTask(t, b.js, tk)
		requireResult(t, tk, task.Started, "1", results.next())
		final := results.next()
		if input == `{"orderId":"42"}` {
			require.Equal(t, task.Completed, final.Kind)
			require.Equal(t, "order/42", <-keys)
			continue
		}
		require.Equal(t, task.Failed, final.Kind, "an empty key fails the attempt")
		require.Equal(t, worker.CodeInvalidIdempotencyKey, final.Error.Code)
		require.False(t, final.Error.Retryable)
	}
	require.Empty(t, keys, "the activity did not run without a key")
}
