package startstop_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/weftrun/weft/pkg/startstop"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// component is a Base whose run loop reports the contexts it ran with and
// returns when soft ends, unless ignoreSoft makes it wait for hard.
type component struct {
	startstop.Base
	ignoreSoft  bool
	hard, soft  context.Context
	runs        int
	hardAtDrain error // hard's error when soft ended
}

func (c *component) Start(ctx context.Context) error {
	return c.Base.Start(ctx, func(hard, soft context.Context) (func(), error) {
		c.hard, c.soft = hard, soft
		return func() {
			c.runs++
			if c.ignoreSoft {
				<-hard.Done()
				return
			}
			<-soft.Done()
			c.hardAtDrain = hard.Err()
		}, nil
	})
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestStopBeforeStartIsANoOp(t *testing.T) {
	t.Parallel()
	var c component
	require.NoError(t, c.Stop(t.Context()))
	require.NoError(t, c.Stop(t.Context()))
	require.False(t, closed(c.Started()), "never started")
	require.False(t, closed(c.Stopped()), "never started")
	require.NoError(t, c.Start(t.Context()), "a Stop before Start does not prevent the Start")
	require.NoError(t, c.Stop(t.Context()))
}

func TestDrain(t *testing.T) {
	t.Parallel()
	var c component
	started, stopped := c.Started(), c.Stopped() // taken before Start
	require.NoError(t, c.Start(t.Context()))
	require.True(t, closed(started), "Started is closed once Start returns")
	require.ErrorIs(t, c.Start(t.Context()), startstop.ErrAlreadyStarted)

	require.NoError(t, c.Stop(t.Context()))
	require.True(t, closed(stopped), "Stop returns once the run loop has")
	require.Error(t, c.soft.Err(), "Stop ends soft")
	require.Error(t, c.hard.Err(), "hard ends when the run loop returns")
	require.NoError(t, c.Stop(t.Context()), "Stop is idempotent")
	require.ErrorIs(t, c.Start(t.Context()), startstop.ErrAlreadyStarted, "a component runs once")
	require.Equal(t, 1, c.runs)
}

func TestDrainCutShort(t *testing.T) {
	t.Parallel()
	c := component{ignoreSoft: true}
	require.NoError(t, c.Start(t.Context()))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := c.Stop(ctx)
	require.ErrorIs(t, err, startstop.ErrDrainCutShort)
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, closed(c.Stopped()), "a cut-short Stop still waits for the run loop")
	require.NoError(t, c.Stop(t.Context()), "a second Stop finds it stopped")
}

func TestStartContextIsAHardStop(t *testing.T) {
	t.Parallel()
	c := component{ignoreSoft: true}
	ctx, cancel := context.WithCancel(t.Context())
	require.NoError(t, c.Start(ctx))
	cancel()
	<-c.Stopped()
	require.Error(t, c.soft.Err(), "soft ends with hard")
	require.NoError(t, c.Stop(t.Context()))
}

func TestFailedStartMayBeRetried(t *testing.T) {
	t.Parallel()
	var b startstop.Base
	boom := errors.New("boom")
	var hard, soft context.Context
	err := b.Start(t.Context(), func(h, s context.Context) (func(), error) {
		hard, soft = h, s
		return nil, boom
	})
	require.ErrorIs(t, err, boom)
	require.Error(t, hard.Err(), "a failed start ends its contexts")
	require.Error(t, soft.Err())
	require.False(t, closed(b.Started()))
	require.NoError(t, b.Stop(t.Context()), "nothing to stop")

	require.NoError(t, b.Start(t.Context(), func(_, s context.Context) (func(), error) {
		return func() { <-s.Done() }, nil
	}))
	require.True(t, closed(b.Started()))
	require.NoError(t, b.Stop(t.Context()))
	require.True(t, closed(b.Stopped()))
}

// A Stop called while Start sets up waits for it and stops what it
// started.
func TestStopWaitsForStart(t *testing.T) {
	t.Parallel()
	var b startstop.Base
	entered, release := make(chan struct{}), make(chan struct{})
	startErr := make(chan error, 1)
	go func() {
		startErr <- b.Start(t.Context(), func(_, soft context.Context) (func(), error) {
			close(entered)
			<-release
			return func() { <-soft.Done() }, nil
		})
	}()
	<-entered
	stopErr := make(chan error, 1)
	go func() { stopErr <- b.Stop(t.Context()) }()
	close(release)
	require.NoError(t, <-startErr)
	require.NoError(t, <-stopErr)
	require.True(t, closed(b.Stopped()), "the Stop stopped the component Start launched")
}

func TestConcurrentStops(t *testing.T) {
	t.Parallel()
	var c component
	require.NoError(t, c.Start(t.Context()))
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = c.Stop(t.Context()) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.True(t, closed(c.Stopped()))
	require.Equal(t, 1, c.runs)
}
