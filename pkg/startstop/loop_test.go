package startstop_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/startstop"
)

// A Loop's Run sees its context end at Stop, and a Run that then returns
// context.Canceled has stopped cleanly.
func TestLoopStopEndsRunCleanly(t *testing.T) {
	t.Parallel()
	ran := make(chan struct{})
	l := &startstop.Loop{Run: func(ctx context.Context) error {
		close(ran)
		<-ctx.Done()
		return ctx.Err()
	}}
	require.NoError(t, l.Start(t.Context()))
	<-ran
	require.NoError(t, l.Stop(t.Context()))
	require.True(t, closed(l.Stopped()))
	require.ErrorIs(t, l.Start(t.Context()), startstop.ErrAlreadyStarted)
}

// A Run that fails by itself has stopped (Stopped is closed), and Stop
// returns its error.
func TestLoopKeepsTheErrorOfARunThatEnded(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	l := &startstop.Loop{Run: func(context.Context) error { return boom }}
	require.NoError(t, l.Start(t.Context()))
	<-l.Stopped()
	require.ErrorIs(t, l.Stop(t.Context()), boom)
}
