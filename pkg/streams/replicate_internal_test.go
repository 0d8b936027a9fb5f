package streams

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A listing's Weft streams come out in name order, each once, and the
// others not at all.
func TestWeftNames(t *testing.T) {
	t.Parallel()
	got := weftNames([]string{"WEFT_TASKS_default", "ORDERS", "WEFT_EVENTS", "WEFT_TASKS_default", "KV_WEFT_HEARTBEATS"})
	require.Equal(t, []string{"KV_WEFT_HEARTBEATS", "WEFT_EVENTS", "WEFT_TASKS_default"}, got)
	require.Empty(t, weftNames(nil))
	require.Empty(t, weftNames([]string{"ORDERS"}))
}
