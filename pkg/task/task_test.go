package task_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/task"
)

func sampleTask() task.Task {
	return task.Task{
		SchemaVersion: task.SchemaVersion, RunID: events.NewRunID(), StepID: "build", LogicalAttemptID: "2",
		PlanVersion: "v1", Activity: "echo", Queue: "default", Input: json.RawMessage(`{"x":1}`),
		IdempotencyKey: "k", TimeoutMillis: 1500, ScheduledAt: time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC),
	}
}

func TestTaskWireNames(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(sampleTask())
	require.NoError(t, err)
	var wire map[string]any
	require.NoError(t, json.Unmarshal(b, &wire))
	for _, name := range []string{"schemaVersion", "runId", "stepId", "logicalAttemptId", "planVersion",
		"activity", "queue", "input", "idempotencyKey", "timeoutMs", "scheduledAt"} {
		require.Contains(t, wire, name)
	}
	require.Equal(t, 1500*time.Millisecond, sampleTask().Timeout())
}

func TestNewResultCarriesTheEventKey(t *testing.T) {
	t.Parallel()
	tk := sampleTask()
	for _, kind := range []task.Kind{task.Started, task.Completed, task.Failed} {
		r := task.NewResult(tk, kind, "3", "worker-a")
		require.Equal(t, events.IdempotencyKey(tk.RunID, "build", "2", events.Type(kind), "v1"), r.IdempotencyKey)
		require.Equal(t, "3", r.EngineAttemptID)
		require.Equal(t, tk.RunID, r.RunID)
		require.False(t, r.EmittedAt.IsZero())
		again := task.NewResult(tk, kind, "4", "worker-b")
		require.Equal(t, r.IdempotencyKey, again.IdempotencyKey, "a redelivery reports under the same key")
	}
	require.True(t, events.Type(task.Completed).Known())
}

func TestDedupeID(t *testing.T) {
	t.Parallel()
	require.Equal(t, "r/a/b/1", task.DedupeID("r", "a/b", "1"))
	require.NotEqual(t, task.DedupeID("r", "s", "1"), task.DedupeID("r", "s", "2"))
}
