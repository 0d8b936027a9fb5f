package round

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/services/engine/internal/decide"
)

// A run's cancellation and its timeouts' notices are separate messages
// with ids of their own, so the bus's duplicate window never drops one as
// a copy of another; the cancels of one notice go out as one message.
func TestCancelNoticesOfOneRunKeepApart(t *testing.T) {
	t.Parallel()
	const run = "0190a8e2-7b3c-7def-8123-456789abcdef"
	msgs, err := cancelMessages([]decide.Cancel{
		{RunID: run, StepID: "a", LogicalAttempt: 1, Reason: "r", Notice: "HEARTBEAT_TIMEOUT/a/1"},
		{RunID: run, StepID: "b", LogicalAttempt: 2, Reason: "t", Notice: "RUN_TIMEOUT"},
		{RunID: run, StepID: "c", LogicalAttempt: 1, Reason: "t", Notice: "RUN_TIMEOUT"},
		{RunID: run, StepID: "b", LogicalAttempt: 2, Reason: "cancelled"},
	})
	require.NoError(t, err)
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.DedupeID
		require.Equal(t, "weft.cancel."+run, m.Subject)
	}
	require.Equal(t, []string{run + "/cancel/HEARTBEAT_TIMEOUT/a/1", run + "/cancel/RUN_TIMEOUT", run + "/cancel"}, ids)
	var n task.Cancel
	require.NoError(t, json.Unmarshal(msgs[1].Payload, &n))
	require.Equal(t, []string{"b", "c"}, n.StepIDs)
	require.Equal(t, map[string]string{"b": "2", "c": "1"}, n.Attempts)
}
