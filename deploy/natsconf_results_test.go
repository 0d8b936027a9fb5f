package deploy

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
)

// Issue #36 finding 2, on a real server from nats.conf: a worker
// credential of any queue may publish on weft.results.*, so it can claim
// the bare idempotency key of another run's attempt as a Nats-Msg-Id. The
// real result, published by the worker that holds the task under
// task.Result.MsgID, is not discarded as a duplicate of the forgery; a
// retry of it still is. Not parallel: loadNATSConf uses t.Setenv.
func TestForgedResultCannotSuppressTheRealOne(t *testing.T) {
	srv := startConfServer(t)
	ctx := t.Context()
	forger, owner := connectAs(t, srv, "worker"), connectAs(t, srv, "worker")
	signer, err := task.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)

	const runID, stepID = "01a2363b-2d8e-7949-ab2c-17cff2dd77f2", "charge"
	tk := task.Task{SchemaVersion: task.SchemaVersion, RunID: runID, StepID: stepID, LogicalAttemptID: "1",
		PlanVersion: "1", Token: signer.Sign(runID, stepID, "1")}
	real := task.NewResult(tk, task.Completed, "1", "w-1")
	require.NotEqual(t, real.IdempotencyKey, real.MsgID())
	subject, err := streams.ResultSubject(runID)
	require.NoError(t, err)

	forged := real
	forged.Token, forged.Output = "", json.RawMessage(`{"forged":true}`)
	publish := func(js jetstream.JetStream, r task.Result, msgID string) *jetstream.PubAck {
		t.Helper()
		body, err := json.Marshal(r)
		require.NoError(t, err)
		ack, err := js.Publish(ctx, subject, body, jetstream.WithMsgID(msgID))
		require.NoError(t, err)
		return ack
	}
	require.False(t, publish(forger, forged, forged.IdempotencyKey).Duplicate, "the worker user may publish any run's results")
	require.False(t, publish(owner, real, real.MsgID()).Duplicate, "the real result is stored beside the forgery")
	require.True(t, publish(owner, real, real.MsgID()).Duplicate, "a retry of the real result is still deduplicated")
}
