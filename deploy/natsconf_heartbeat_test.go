package deploy

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/task"
)

// The heartbeat bucket under nats.conf: the engine creates it and reads
// a step's entry; a worker puts heartbeats and reads them back, and may
// neither remove the bucket nor touch the run's streams through it. Not
// parallel: loadNATSConf uses t.Setenv.
func TestHeartbeatBucketPermissions(t *testing.T) {
	srv := startConfServer(t)
	ctx := t.Context()
	engine := connectAs(t, srv, "engine")
	_, err := engine.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: task.HeartbeatsBucket, History: 1,
		MaxValueSize: task.DefaultMaxHeartbeatDetailsBytes + task.HeartbeatRecordOverheadBytes, MaxBytes: 256 << 20,
		Storage: jetstream.FileStorage})
	require.NoError(t, err, "the engine creates the bucket (as engine.ensureHeartbeats does)")

	worker := connectAs(t, srv, "worker")
	key := task.HeartbeatKey("0190a8e2-7b3c-7def-8123-456789abcdef", "extract")
	data, err := json.Marshal(task.Heartbeat{SchemaVersion: 1, StepID: "extract", LogicalAttemptID: "1"})
	require.NoError(t, err)
	_, err = worker.Publish(ctx, "$KV."+task.HeartbeatsBucket+"."+key, data)
	require.NoError(t, err, "a worker puts a heartbeat")
	wkv, err := worker.KeyValue(ctx, task.HeartbeatsBucket)
	require.NoError(t, err, "a worker binds to the bucket")
	e, err := wkv.Get(ctx, key)
	require.NoError(t, err, "a worker reads the last heartbeat")
	require.JSONEq(t, string(data), string(e.Value()))

	ekv, err := engine.KeyValue(ctx, task.HeartbeatsBucket)
	require.NoError(t, err)
	_, err = ekv.Get(ctx, key)
	require.NoError(t, err, "the engine reads the last heartbeat")

	refused := func(what string, call func(context.Context) error) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, refusedWithin)
		defer cancel()
		require.Error(t, call(cctx), "a worker may not %s", what)
	}
	refused("delete the bucket", func(c context.Context) error { return worker.DeleteKeyValue(c, task.HeartbeatsBucket) })
	refused("recreate the bucket", func(c context.Context) error {
		_, err := worker.CreateOrUpdateKeyValue(c, jetstream.KeyValueConfig{Bucket: task.HeartbeatsBucket})
		return err
	})
}
