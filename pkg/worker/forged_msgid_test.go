package worker_test

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/worker"
)

// Issue #36, finding 2: a forger who knows a run id computes its attempt's
// idempotency keys and publishes results under them as Nats-Msg-Id before
// the worker reports. The forgeries are in the stream (the engine drops
// them for their token), but they claim no id of the real results: the
// worker's StepStarted is not a duplicate and its StepCompleted, with the
// activity's output and the task's token, is stored.
func TestForgedResultCannotClaimTheRealResultsID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newRecordingGate()
	close(g.release)
	b.startWorker(t, nil, worker.Config{Concurrency: 1}, g.register(t))
	tk := newTask("gate", `{"genuine":true}`)
	tk.Token = "the-engine-signature-of-this-attempt"
	subject, err := streams.ResultSubject(tk.RunID)
	require.NoError(t, err)
	for _, kind := range []task.Kind{task.Started, task.Completed} {
		forged := task.NewResult(tk, kind, "1", "forger")
		forged.Token = ""
		data, err := json.Marshal(forged)
		require.NoError(t, err)
		ack, err := b.js.PublishMsg(t.Context(), &nats.Msg{Subject: subject, Data: data},
			jetstream.WithMsgID(forged.IdempotencyKey))
		require.NoError(t, err)
		require.False(t, ack.Duplicate)
	}
	publishTask(t, b.js, tk)
	res := b.results(t, tk.RunID)
	for _, kind := range []task.Kind{task.Started, task.Completed} {
		require.Equal(t, "forger", res.await("build", kind).WorkerID, "the forgery comes first")
	}
	real := res.await("build", task.Completed)
	require.Equal(t, tk.Token, real.Token)
	require.NotEqual(t, "forger", real.WorkerID)
}
