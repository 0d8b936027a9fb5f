package startstop_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/startstop"
)

// The end of Run's context asks for a drain: the component's hard
// context is still live when its soft one ends.
func TestRunDrainsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	var c component
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- startstop.Run(ctx, &c, 0) }()
	<-c.Started()
	cancel()
	require.NoError(t, <-done)
	require.True(t, closed(c.Stopped()))
	require.NoError(t, c.hardAtDrain, "a drain, not a hard stop")
}

func TestRunCutsTheDrainShort(t *testing.T) {
	t.Parallel()
	c := component{ignoreSoft: true}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- startstop.Run(ctx, &c, 1) }() // 1ns: never enough
	<-c.Started()
	cancel()
	require.ErrorIs(t, <-done, startstop.ErrDrainCutShort)
	require.True(t, closed(c.Stopped()))
}

func TestRunReturnsTheStartError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	require.ErrorIs(t, startstop.Run(t.Context(), failing{boom}, 0), boom)
}

// A context that ended before Run stops the component as soon as it
// starts.
func TestRunWithAnEndedContext(t *testing.T) {
	t.Parallel()
	var c component
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.NoError(t, startstop.Run(ctx, &c, 0))
	require.True(t, closed(c.Stopped()))
}

type failing struct{ err error }

func (f failing) Start(context.Context) error { return f.err }
func (f failing) Stop(context.Context) error  { return nil }
