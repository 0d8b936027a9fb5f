package task_test

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

// TestPersistedGoldenHeartbeat: the heartbeat record, which waits in the
// bucket across a rolling upgrade, decodes with today's reader and is
// written byte for byte as testdata/persisted/Heartbeat_v1.json holds it.
func TestPersistedGoldenHeartbeat(t *testing.T) {
	t.Parallel()
	hb := task.Heartbeat{SchemaVersion: task.SchemaVersion, RunID: goldenRun, StepID: "extract", LogicalAttemptID: "2",
		WorkerID: "host-1/42", Details: json.RawMessage(`{"offset":1200}`), SentAt: goldenT0}
	goldentest.CheckAll(t, filepath.Join("testdata", "persisted"), []goldentest.Record{
		messageOf("Heartbeat_v1", func() task.Heartbeat { return hb }, hb),
	})
}

// A heartbeat key is a valid key-value key whatever the step id holds,
// and two step ids never share one.
func TestHeartbeatKey(t *testing.T) {
	t.Parallel()
	valid := regexp.MustCompile(`\A[-/_=.a-zA-Z0-9]+\z`)
	seen := map[string]string{}
	for _, step := range []string{"extract", "étape/1", "a b", "a_b", "a-b", "ab", "~x"} {
		k := task.HeartbeatKey(goldenRun, step)
		require.Regexp(t, valid, k)
		require.NotContains(t, seen, k, "steps %q and %q", step, seen[k])
		seen[k] = step
	}
	require.Equal(t, goldenRun+".ZXh0cmFjdA", task.HeartbeatKey(goldenRun, "extract"))
}
