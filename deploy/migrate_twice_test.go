package deploy

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/task"
)

// sizedQueues are the task queues deploy/nats.conf's max_file_store is
// sized for (docs/deploy.md, "JetStream storage"): each has a lanes
// stream, which the engine creates (streams.EnsureTaskLanes).
var sizedQueues = []string{"default", "q2", "q3", "q4", "q5", "q6"}

// heartbeatBucket is the engine's heartbeat bucket at its default size
// (engine.ensureHeartbeats).
func heartbeatBucket() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: task.HeartbeatsBucket, History: 1,
		MaxValueSize: task.DefaultMaxHeartbeatDetailsBytes + task.HeartbeatRecordOverheadBytes, MaxBytes: 256 << 20,
		Storage: jetstream.FileStorage}
}

// A warm `docker compose up` (after `down`) runs migrate again and
// restarts the engine against the streams the first start made. With
// every stream nats.conf is sized for in place (Weft's, the heartbeat
// bucket, six queues' lanes), the second migrate, the engine's bucket and
// its lanes ensures all pass on a server started from nats.conf, with its
// real max_file_store. Not parallel: loadNATSConf uses t.Setenv.
func TestMigrateTwiceOnNATSConf(t *testing.T) {
	srv := startConfServer(t) // the first migrate
	ctx := t.Context()
	engine := connectAs(t, srv, "engine")
	engineStart := func(when string) {
		t.Helper()
		_, err := engine.CreateOrUpdateKeyValue(ctx, heartbeatBucket())
		require.NoError(t, err, "%s: the heartbeat bucket", when)
		for _, q := range sizedQueues {
			require.NoError(t, streams.EnsureTaskLanes(ctx, engine, streams.Config{}, q), "%s: queue %s", when, q)
		}
	}
	engineStart("the first start")

	migrate := connectAs(t, srv, "migrate")
	require.NoError(t, streams.Ensure(ctx, migrate, streams.Config{}), "the second migrate")
	engineStart("the second start")
}
