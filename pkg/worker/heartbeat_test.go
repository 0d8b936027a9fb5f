package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// createHeartbeats creates the heartbeat bucket, as the engine does.
func createHeartbeats(t *testing.T, b *bundle) jetstream.KeyValue {
	t.Helper()
	kv, err := b.js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: task.HeartbeatsBucket,
		MaxValueSize: task.DefaultMaxHeartbeatDetailsBytes + task.HeartbeatRecordOverheadBytes, MaxBytes: 8 << 20})
	require.NoError(t, err)
	return kv
}

// quoted returns a JSON string that encodes to exactly n bytes.
func quoted(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`)
}

// A heartbeat's details at MaxHeartbeatDetailsBytes are stored; one byte
// more is refused with ErrHeartbeatTooLarge and stores nothing.
func TestHeartbeatDetailsLimitEdge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	kv := createHeartbeats(t, b)
	const limit = 64
	errs := make(chan error, 2)
	b.startWorker(t, nil, worker.Config{MaxHeartbeatDetailsBytes: limit}, func(w *worker.Worker) {
		require.NoError(t, w.Register("beat", func(ctx context.Context, in worker.Input) (worker.Output, error) {
			errs <- in.Heartbeat(ctx, quoted(limit))
			errs <- in.Heartbeat(ctx, quoted(limit+1))
			return worker.Output{}, nil
		}))
	})
	tk := newTask("beat", "")
	publishTask(t, b.js, tk)
	require.NoError(t, <-errs, "details exactly at the limit")
	require.ErrorIs(t, <-errs, worker.ErrHeartbeatTooLarge, "one byte over")
	b.results(t, tk.RunID).final()

	e, err := kv.Get(t.Context(), task.HeartbeatKey(tk.RunID, tk.StepID))
	require.NoError(t, err)
	var rec task.Heartbeat
	require.NoError(t, json.Unmarshal(e.Value(), &rec))
	require.JSONEq(t, string(quoted(limit)), string(rec.Details), "the refused heartbeat left the last one")
	require.Equal(t, "1", rec.LogicalAttemptID)
	require.Equal(t, uint64(1), e.Revision(), "one heartbeat stored")

	_, err = worker.New(b.js, worker.Config{MaxHeartbeatDetailsBytes: task.DefaultMaxHeartbeatDetailsBytes + 1})
	require.ErrorIs(t, err, worker.ErrInvalidConfig, "a limit the bucket would refuse")
	require.ErrorIs(t, worker.Input{}.Heartbeat(t.Context(), nil), worker.ErrNoHeartbeat)
}

// The next attempt of a step gets the details of the last heartbeat an
// earlier one sent; a first attempt gets none.
func TestLastHeartbeatGoesToTheNextAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	createHeartbeats(t, b)
	got := make(chan json.RawMessage, 2)
	b.startWorker(t, nil, worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Register("resume", func(ctx context.Context, in worker.Input) (worker.Output, error) {
			got <- in.LastHeartbeat
			if err := in.Heartbeat(ctx, map[string]int{"offset": 7}); err != nil {
				return worker.Output{}, err
			}
			return worker.Output{}, worker.Retryable("PARTIAL", "stopped at offset 7")
		}))
	})
	first := newTask("resume", "")
	run := b.results(t, first.RunID)
	publishTask(t, b.js, first)
	require.Empty(t, <-got)
	run.final()
	second := step(first, first.StepID, "2")
	publishTask(t, b.js, second)
	require.JSONEq(t, `{"offset":7}`, string(<-got))
	run.final()
}

// A notice that cancels a step's timed-out attempt leaves its retry
// running on the same worker alone.
func TestCancelNoticeSparesALaterAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate()
	b.startWorker(t, nil, worker.Config{Concurrency: 4}, func(w *worker.Worker) {
		require.NoError(t, w.Register("gate", g.run))
	})
	first := newTask("gate", "")
	second := step(first, first.StepID, "2")
	publishTask(t, b.js, first)
	g.awaitStart(t)
	publishTask(t, b.js, second)
	g.awaitStart(t)
	run := b.results(t, first.RunID)
	sendCancel(t, b, task.Cancel{SchemaVersion: 1, RunID: first.RunID, StepIDs: []string{first.StepID},
		Attempts: map[string]string{first.StepID: "1"}, Reason: "HEARTBEAT_TIMEOUT"})
	for {
		r := run.next()
		if r.Kind == task.Failed {
			require.Equal(t, "1", r.LogicalAttemptID, "only the timed-out attempt stops")
			break
		}
	}
	close(g.release)
	for {
		r := run.next()
		if r.Kind != task.Started {
			require.Equal(t, task.Completed, r.Kind)
			require.Equal(t, "2", r.LogicalAttemptID)
			break
		}
	}
}
