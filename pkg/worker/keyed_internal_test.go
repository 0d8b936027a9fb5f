package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest"
)

// The delivery epoch starts when the worker is built and moves to the
// present when the connection has reconnected (a restarted server) or the
// worker saw its consumer fail; never back.
func TestDeliveryEpoch(t *testing.T) {
	t.Parallel()
	srv := weftest.NewNATS(t)
	nc := srv.Conn(t)
	t0 := time.Now()
	d := newDeliveryEpoch(nc, t0)
	require.True(t, d.predates(t0.Add(-time.Millisecond), t0), "stored before the worker was built")
	require.False(t, d.predates(t0.Add(time.Millisecond), t0.Add(time.Second)), "stored after, no reconnect")

	srv.Restart()
	require.Eventually(t, func() bool { return nc.Stats().Reconnects > 0 && nc.IsConnected() }, 20*time.Second, 10*time.Millisecond)
	t1 := t0.Add(time.Minute)
	require.True(t, d.predates(t0.Add(time.Second), t1), "stored before the reconnect was noticed")
	require.False(t, d.predates(t1.Add(time.Millisecond), t1.Add(time.Second)))

	d.distrust(t1.Add(time.Hour))
	require.True(t, d.predates(t1.Add(time.Minute), t1.Add(time.Hour)), "stored before a failed pull")
	d.distrust(t0)
	require.True(t, d.predates(t1.Add(time.Minute), t1.Add(time.Hour)), "the epoch never moves back")
}

// keyedMemory forgets its oldest attempt past its bound, and an entry
// keeps an unacked result until an ack.
func TestKeyedMemory(t *testing.T) {
	t.Parallel()
	m := newKeyedMemory(2)
	a, b, c := attemptKey{"r", "a", "1"}, attemptKey{"r", "b", "1"}, attemptKey{"r", "c", "1"}
	e, err := m.take(t.Context(), a)
	require.NoError(t, err)
	require.False(t, e.mayHaveRun())
	e.done(task.Result{StepID: "a"}, true, false)
	e, err = m.take(t.Context(), a)
	require.NoError(t, err)
	require.True(t, e.mayHaveRun())
	r, ok := e.remembered()
	require.True(t, ok)
	require.Equal(t, "a", r.StepID)
	e.done(r, true, true)
	_, ok = e.remembered()
	require.False(t, ok, "acked: nothing to report again")

	m.entry(b)
	m.entry(c)
	e, err = m.take(t.Context(), a)
	require.NoError(t, err)
	require.False(t, e.mayHaveRun(), "forgotten past the bound")
}
