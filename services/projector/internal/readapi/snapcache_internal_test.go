package readapi

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
)

// snapOf is a cached snapshot of n steps.
func snapOf(n int) *cachedSnap {
	return &cachedSnap{snap: events.RunSnapshot{Steps: make([]events.StepSnapshot, n)}}
}

// The snapshot cache holds at most maxSteps steps: at the bound it keeps
// every snapshot; one step over drops the least recently used; a
// snapshot heavier than the bound is not kept; a run's new version
// replaces its old one; a snapshot of no steps weighs 1.
func TestSnapCacheBound(t *testing.T) {
	t.Parallel()
	c := newSnapCache(10)
	c.put("a", snapOf(4))
	c.put("b", snapOf(5))
	c.put("c", snapOf(0))
	runs, steps := c.held()
	require.Equal(t, 3, runs)
	require.Equal(t, 10, steps, "at the bound")
	require.NotNil(t, c.get("a"), "a is now the most recently used")

	c.put("d", snapOf(1))
	require.Nil(t, c.get("b"), "one step over: b, the least recently used, is dropped")
	require.NotNil(t, c.get("a"))
	require.NotNil(t, c.get("c"))
	runs, steps = c.held()
	require.Equal(t, 3, runs)
	require.Equal(t, 6, steps)

	newer := snapOf(2)
	c.put("a", newer)
	require.Same(t, newer, c.get("a"))
	_, steps = c.held()
	require.Equal(t, 4, steps, "a's old version no longer counts")

	c.put("e", snapOf(11))
	require.Nil(t, c.get("e"), "heavier than the whole cache")
	require.NotNil(t, c.get("a"), "and it drops nothing")

	off := newSnapCache(-1)
	off.put("a", snapOf(1))
	require.Nil(t, off.get("a"))
}
