package worker_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

func untilDone(ctx context.Context, _ worker.Input) (worker.Output, error) {
	<-ctx.Done()
	return worker.Output{}, errors.New("gave up")
}

func TestFailureMapping(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, nil, worker.Config{Concurrency: 8}, func(w *worker.Worker) {
		require.NoError(t, w.Register("plain", func(context.Context, worker.Input) (worker.Output, error) {
			return worker.Output{}, errors.New("disk full")
		}))
		require.NoError(t, w.Register("typed", func(context.Context, worker.Input) (worker.Output, error) {
			return worker.Output{}, fmt.Errorf("wrapped: %w", worker.NonRetryable("BAD_INPUT", "no such table"))
		}))
		require.NoError(t, w.Register("retryable", func(context.Context, worker.Input) (worker.Output, error) {
			return worker.Output{}, worker.Retryable("RATE_LIMITED", "slow down")
		}))
		require.NoError(t, w.Register("panic", func(context.Context, worker.Input) (worker.Output, error) {
			panic("nil map")
		}))
		require.NoError(t, w.Register("deadline", untilDone))
		require.NoError(t, w.Register("capped", untilDone, worker.WithTimeout(20*time.Millisecond)))
		require.NoError(t, w.Register("invalid", func(context.Context, worker.Input) (worker.Output, error) {
			return worker.Output{JSON: []byte(`{"a":`)}, nil
		}))
		require.NoError(t, w.Register("bad-artifact", func(context.Context, worker.Input) (worker.Output, error) {
			return worker.Output{Artifacts: []events.ArtifactRef{{URI: "s3://b/k"}}}, nil
		}))
		require.NoError(t, w.Register("long-message", func(context.Context, worker.Input) (worker.Output, error) {
			return worker.Output{}, errors.New(strings.Repeat("é", 10_000))
		}))
	})
	tests := []struct {
		activity  string
		timeoutMs int64
		code      string
		retryable bool
		message   string // substring of the error message
	}{
		{activity: "plain", code: worker.CodeActivityError, retryable: true, message: "disk full"},
		{activity: "typed", code: "BAD_INPUT", retryable: false, message: "no such table"},
		{activity: "retryable", code: "RATE_LIMITED", retryable: true, message: "slow down"},
		{activity: "panic", code: worker.CodePanic, retryable: true, message: "nil map"},
		{activity: "deadline", timeoutMs: 20, code: worker.CodeTimeout, retryable: true, message: "20ms"},
		{activity: "capped", timeoutMs: 3_600_000, code: worker.CodeTimeout, retryable: true, message: "20ms"},
		{activity: "invalid", code: worker.CodeInvalidOutput, retryable: false, message: "not valid JSON"},
		{activity: "bad-artifact", code: worker.CodeInvalidOutput, retryable: false, message: "artifact 0"},
		{activity: "long-message", code: worker.CodeActivityError, retryable: true, message: "(truncated)"},
	}
	t.Run("cases", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.activity, func(t *testing.T) {
				t.Parallel()
				tk := newTask(tt.activity, "")
				tk.TimeoutMillis = cmp.Or(tt.timeoutMs, tk.TimeoutMillis)
				results := b.results(t, tk.RunID)
				publishTask(t, b.js, tk)
				requireResult(t, tk, task.Started, "1", results.next())
				r := results.next()
				requireFailed(t, tk, r, tt.code, tt.retryable)
				require.Contains(t, r.Error.Message, tt.message)
				require.LessOrEqual(t, len(r.Error.Message), 2048)
			})
		}
	})
	b.requireTasksSettled(t)
}

func TestPanicIsLoggedWithStack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("panic", func(context.Context, worker.Input) (worker.Output, error) {
			panic(errors.New("boom"))
		}))
	})
	tk := newTask("panic", "")
	results := b.results(t, tk.RunID)
	publishTask(t, b.js, tk)
	results.next()
	requireFailed(t, tk, results.next(), worker.CodePanic, true)
	require.Contains(t, b.logs.String(), `"level":"ERROR","msg":"worker: activity panicked"`)
	require.Contains(t, b.logs.String(), "failure_test.go", "the stack is logged")
}

func TestUnknownActivity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("echo", echo))
	})
	tk := newTask("nope", "")
	results := b.results(t, tk.RunID)
	publishTask(t, b.js, tk)
	r := results.next()
	requireFailed(t, tk, r, worker.CodeUnknownActivity, false)
	require.Equal(t, worker.CategoryWorker, r.Error.Category)
	require.Contains(t, r.Error.Message, `no activity "nope" is registered`)
	require.Contains(t, r.Error.Message, `it registers "echo"`, "the failure names what the worker does run")
	b.requireTasksSettled(t)
}

func TestUndecodableTaskIsTerminated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("echo", echo))
	})
	for _, bad := range []string{`not json`, `{"schemaVersion": 99, "runId": "r", "stepId": "s", "logicalAttemptId": "1"}`,
		`{"runId": "a.b", "stepId": "s", "logicalAttemptId": "1"}`, `{"runId": "r"}`} {
		_, err := b.js.PublishMsg(t.Context(), &nats.Msg{Subject: "weft.tasks.default", Data: []byte(bad)})
		require.NoError(t, err)
	}
	b.requireTasksSettled(t)
	require.Equal(t, 4, strings.Count(b.logs.String(), `"level":"ERROR","msg":"worker: undecodable task terminated"`))

	// The worker carries on.
	tk := newTask("echo", `1`)
	results := b.results(t, tk.RunID)
	publishTask(t, b.js, tk)
	requireResult(t, tk, task.Started, "1", results.next())
	requireResult(t, tk, task.Completed, "1", results.next())

	s, err := b.js.Stream(t.Context(), streams.ResultsStream)
	require.NoError(t, err)
	info, err := s.Info(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, 2, info.State.Msgs, "a terminated task reports nothing")
}
