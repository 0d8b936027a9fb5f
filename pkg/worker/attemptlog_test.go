package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// Issue 16, defect 10: every delivery logs its start and its end at info
// level, with the attempt's ids in snake_case keys, so that executions
// (settled_by "activity") can be counted per logical attempt.
func TestAttemptStartAndEndAreLogged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("echo", echo))
		require.NoError(t, w.Register("refuse", func(context.Context, worker.Input) (worker.Output, error) {
			return worker.Output{}, worker.NonRetryable("BAD_INPUT", "no")
		}))
	})
	for _, c := range []struct{ activity, outcome, code string }{
		{"echo", "completed", ""},
		{"refuse", "failed", "BAD_INPUT"},
	} {
		tk := newTask(c.activity, `{}`)
		publishTask(t, b.js, tk)
		var ended []map[string]any
		require.Eventually(t, func() bool {
			ended = b.logLines(t, "worker: attempt ended", tk.RunID)
			return len(ended) == 1
		}, waitFor, 10*time.Millisecond)
		started := b.logLines(t, "worker: attempt started", tk.RunID)
		require.Len(t, started, 1)
		for _, l := range []map[string]any{started[0], ended[0]} {
			require.Equal(t, "INFO", l["level"])
			require.Equal(t, tk.StepID, l["step_id"])
			require.Equal(t, "1", l["logical_attempt_id"])
			require.Equal(t, "1", l["engine_attempt_id"], "the delivery count")
			require.Equal(t, c.activity, l["activity"])
			require.Equal(t, worker.DefaultQueue, l["queue"])
			require.NotEmpty(t, l["worker_id"])
		}
		e := ended[0]
		require.Equal(t, c.outcome, e["outcome"])
		require.Equal(t, "activity", e["settled_by"], "the activity ran")
		require.Equal(t, true, e["published"])
		require.Equal(t, true, e["acked"])
		require.GreaterOrEqual(t, e["duration_ms"], 0.0)
		if c.code == "" {
			require.NotContains(t, e, "code")
		} else {
			require.Equal(t, c.code, e["code"])
		}
	}
	b.requireTasksSettled(t)
}

// A delivery the worker ends without running the activity says so: here a
// keyed retry whose record the engine holds.
func TestAttemptEndLogsHowItWasSettled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	engine := b.serveLookups(t)
	act := &counted{}
	b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("charge", act.run))
	})
	tk := keyedTask("charge", "2")
	engine.put(task.ReconcileRecord{OperationID: tk.OperationID, IdempotencyKey: tk.IdempotencyKey,
		Status: task.StatusCompleted, Result: &task.ReconcileResult{Output: json.RawMessage(`1`)}})
	publishTask(t, b.js, tk)
	require.Eventually(t, func() bool {
		ended := b.logLines(t, "worker: attempt ended", tk.RunID)
		return len(ended) == 1 && ended[0]["settled_by"] == "record" && ended[0]["outcome"] == "completed"
	}, waitFor, 10*time.Millisecond)
	require.Zero(t, act.runs.Load())
}

// waitLog waits until the bundle's logs contain every one of msgs.
func (b *bundle) waitLog(t *testing.T, msgs ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		logs := b.logs.String()
		for _, m := range msgs {
			if !strings.Contains(logs, m) {
				return false
			}
		}
		return true
	}, waitFor, 10*time.Millisecond, "logs lack one of %q", msgs)
}

// logLines returns the JSON log lines with message msg about run runID.
func (b *bundle) logLines(t *testing.T, msg, runID string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.logs.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		if rec["msg"] == msg && rec["run_id"] == runID {
			lines = append(lines, rec)
		}
	}
	return lines
}
