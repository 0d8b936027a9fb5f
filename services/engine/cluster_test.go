package engine_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/engine"
)

// clusterStreams are Weft's streams at R3, small enough that three nodes
// on one disk can reserve them.
var clusterStreams = streams.Config{Replicas: 3, MaxBytes: 64 << 20, LanesMaxBytes: 16 << 20, CancelsMaxBytes: 16 << 20}

// An engine that starts while its 3-node cluster has lost its quorum (two
// nodes killed) waits for it: the heartbeat bucket it creates at start is
// asked for again until a leader answers, rather than the engine exiting;
// once the two nodes are back, the engine runs a plan to the end.
func TestEngineStartsThroughAClusterWithoutQuorum(t *testing.T) {
	t.Parallel()
	cluster := weftest.NewNATSCluster(t, 3)
	s := newStackOn(t, cluster, clusterStreams)
	logs := &weftest.Buffer{}
	s.logger = slog.New(slog.NewTextHandler(logs, nil))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("engine log:\n%s", logs)
		}
	})
	rawWorker(t, s.js, "default", echo)

	cluster.Kill(1)
	cluster.Kill(2)
	s.runEngine(t, engine.Config{Streams: clusterStreams, HeartbeatBucketBytes: 16 << 20, RetryDelay: 100 * time.Millisecond})
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "heartbeat bucket unanswered") },
		waitFor, 10*time.Millisecond, "the engine met a cluster without quorum")
	cluster.Start(1)
	cluster.Start(2)
	cluster.WaitReady()

	runID := s.start(t, parsePlan(t, `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo"}]}`))
	require.Equal(t, events.RunCompleted, terminal(s.waitTerminal(t, runID)))
}
