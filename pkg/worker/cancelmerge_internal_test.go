package worker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/task"
)

// A run's notices add up: a later one (another attempt's timeout) keeps
// covering what an earlier one covered.
func TestMergeCancelsCoversBoth(t *testing.T) {
	t.Parallel()
	a := task.Cancel{RunID: "r", StepIDs: []string{"a"}, Attempts: map[string]string{"a": "2"}, Reason: "first"}
	b := task.Cancel{RunID: "r", StepIDs: []string{"b"}, Attempts: map[string]string{"b": "1"}, Reason: "second"}
	m := mergeCancels(a, b)
	require.Equal(t, "second", m.Reason)
	for _, c := range []struct {
		step, attempt string
		covered       bool
	}{{"a", "1", true}, {"a", "2", true}, {"a", "3", false}, {"b", "1", true}, {"b", "2", false}, {"c", "1", false}} {
		require.Equal(t, c.covered, m.Covers(c.step, c.attempt), "%s/%s", c.step, c.attempt)
	}
	require.True(t, mergeCancels(a, task.Cancel{RunID: "r", StepIDs: []string{"a"}, Attempts: map[string]string{"a": "1"}}).Covers("a", "2"),
		"a lower attempt does not lift a higher one")
	require.True(t, mergeCancels(task.Cancel{RunID: "r", StepIDs: []string{"a"}}, a).Covers("a", "9"), "every attempt stays every attempt")
	require.True(t, mergeCancels(a, task.Cancel{RunID: "r"}).Covers("z", "1"), "a whole-run notice covers every step")
	require.True(t, mergeCancels(task.Cancel{RunID: "r"}, b).Covers("z", "1"))
	require.Equal(t, map[string]string{"a": "2"}, a.Attempts, "the notices merged are left alone")

	var r recentCancels
	r.add(a)
	r.add(b)
	got, ok := r.get("r")
	require.True(t, ok)
	require.True(t, got.Covers("a", "2"), "a worker remembers both notices of the run")
	require.True(t, got.Covers("b", "1"))
}
