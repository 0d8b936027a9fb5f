package intake

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// blockedGrouper is a grouper whose first maxGroups groups block in
// decide until release is closed; every group decided is recorded.
type blockedGrouper struct {
	g       *grouper[*call]
	release chan struct{}
	started chan struct{}

	mu     sync.Mutex
	groups [][]*call
}

func newBlockedGrouper() *blockedGrouper {
	bg := &blockedGrouper{release: make(chan struct{}), started: make(chan struct{}, maxGroups)}
	bg.g = &grouper[*call]{decide: func(group []*call) {
		select {
		case bg.started <- struct{}{}:
			<-bg.release
		default:
		}
		bg.mu.Lock()
		defer bg.mu.Unlock()
		bg.groups = append(bg.groups, group)
		for _, c := range group {
			c.res.SignalID = c.id // the answer: decided
		}
	}}
	return bg
}

// send sends a call for run from a goroutine and returns it and a channel
// closed once send returned.
func (bg *blockedGrouper) send(ctx context.Context, run, id string) (*call, chan struct{}) {
	c := &call{waiter: waiter{ctx: ctx}, sig: Signal{RunID: run}, id: id}
	done := make(chan struct{})
	go func() {
		defer close(done)
		bg.g.send(c)
	}()
	return c, done
}

// waitQueued waits until n calls wait for a group.
func (bg *blockedGrouper) waitQueued(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		bg.g.mu.Lock()
		defer bg.g.mu.Unlock()
		return len(bg.g.queue) == n
	}, 5*time.Second, time.Millisecond)
}

// busy sends maxGroups calls that lead groups and block in them.
func (bg *blockedGrouper) busy(t *testing.T) []chan struct{} {
	t.Helper()
	var dones []chan struct{}
	for i := range maxGroups {
		_, done := bg.send(t.Context(), fmt.Sprint("leader-", i), "leader")
		dones = append(dones, done)
		<-bg.started
	}
	return dones
}

func TestGrouperGroupsWaitingCallsOfDistinctRuns(t *testing.T) {
	t.Parallel()
	bg := newBlockedGrouper()
	dones := bg.busy(t)
	runs := []string{"a", "a", "b", "c", "a", "b"}
	for i := range maxGroupSize + 8 {
		runs = append(runs, fmt.Sprint("r", i))
	}
	var calls []*call
	for i, run := range runs {
		c, done := bg.send(t.Context(), run, fmt.Sprint("s", i))
		calls, dones = append(calls, c), append(dones, done)
		bg.waitQueued(t, i+1)
	}
	close(bg.release)
	for _, done := range dones {
		<-done
	}

	decided := map[*call]int{}
	for _, group := range bg.groups {
		require.LessOrEqual(t, len(group), maxGroupSize)
		seen := map[string]bool{}
		for _, c := range group {
			require.False(t, seen[c.sig.RunID], "two calls of run %s in one group", c.sig.RunID)
			seen[c.sig.RunID] = true
			decided[c]++
		}
	}
	for _, c := range calls {
		require.Equal(t, 1, decided[c], "call %s decided once", c.id)
		require.Equal(t, c.id, c.res.SignalID, "call %s answered", c.id)
	}
	require.Zero(t, bg.g.leaders, "every lead given up")
}

func TestGrouperCallCanceledWhileWaitingLeaves(t *testing.T) {
	t.Parallel()
	bg := newBlockedGrouper()
	dones := bg.busy(t)
	first, firstDone := bg.send(t.Context(), "x", "first")
	bg.waitQueued(t, 1)
	ctx, cancel := context.WithCancel(t.Context())
	canceled, canceledDone := bg.send(ctx, "y", "canceled")
	bg.waitQueued(t, 2)
	last, lastDone := bg.send(t.Context(), "z", "last")
	bg.waitQueued(t, 3)

	cancel()
	<-canceledDone
	require.ErrorIs(t, canceled.err, context.Canceled)
	bg.g.mu.Lock()
	require.Equal(t, []*call{first, last}, bg.g.queue, "the others wait on, in order")
	bg.g.mu.Unlock()
	close(bg.release)
	for _, done := range append(dones, firstDone, lastDone) {
		<-done
	}
	for _, c := range []*call{first, last} {
		require.NoError(t, c.err)
		require.Equal(t, c.id, c.res.SignalID)
	}
	for _, group := range bg.groups {
		require.NotContains(t, group, canceled, "a call that left is not decided")
	}
}
