package task_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/task"
)

func TestCancelCovers(t *testing.T) {
	t.Parallel()
	c := task.Cancel{RunID: "r", StepIDs: []string{"a", "b", "c"}, Attempts: map[string]string{"a": "2", "c": "x"}}
	cases := []struct {
		step, attempt string
		want          bool
	}{
		{"a", "1", true},  // an earlier attempt of a cancelled step
		{"a", "2", true},  // the attempt in flight at the cancel
		{"a", "3", false}, // a later attempt (RETRY_STEP) runs
		{"b", "7", true},  // a step named without an attempt: every attempt
		{"c", "x", true},  // an attempt id that is not a number: equality
		{"c", "y", false},
		{"d", "1", false}, // a step not named
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, c.Covers(tc.step, tc.attempt), "step %s attempt %s", tc.step, tc.attempt)
	}
	whole := task.Cancel{RunID: "r"}
	require.True(t, whole.Covers("any", "9"), "a notice naming no step cancels every step")
}

// A notice from an engine that predates Attempts decodes with none, and
// Attempts is left out of a notice that has none.
func TestCancelAttemptsWire(t *testing.T) {
	t.Parallel()
	var old task.Cancel
	require.NoError(t, json.Unmarshal([]byte(`{"schemaVersion":1,"runId":"r","stepIds":["a"],"reason":"x"}`), &old))
	require.Nil(t, old.Attempts)
	require.True(t, old.Covers("a", "5"))
	b, err := json.Marshal(task.Cancel{SchemaVersion: 1, RunID: "r", StepIDs: []string{"a"}, Reason: "x"})
	require.NoError(t, err)
	require.JSONEq(t, `{"schemaVersion":1,"runId":"r","stepIds":["a"],"reason":"x"}`, string(b))
	b, err = json.Marshal(task.Cancel{SchemaVersion: 1, RunID: "r", StepIDs: []string{"a"}, Attempts: map[string]string{"a": "3"}})
	require.NoError(t, err)
	require.JSONEq(t, `{"schemaVersion":1,"runId":"r","stepIds":["a"],"reason":"","attempts":{"a":"3"}}`, string(b))
}
