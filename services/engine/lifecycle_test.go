package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/startstop"
	"github.com/weftrun/weft/services/engine"
)

// The engine has pkg/startstop's lifecycle: Start runs it in the
// background, Stop drains it and is idempotent, and an engine runs once.
func TestEngineStartStop(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	eng, err := engine.New(s.db.Pool, s.nats.Conn(t), engine.Config{TaskKeys: testTaskKeys})
	require.NoError(t, err)
	require.NoError(t, eng.Stop(t.Context()), "stopping an engine never started is a no-op")

	require.NoError(t, eng.Start(context.Background()))
	<-eng.Started()
	runID := s.start(t, parsePlan(t, `{"planId":"p","planVersion":"1","steps":[{"id":"a","activity":"echo"}]}`))
	s.waitEvent(t, runID, events.StepScheduled) // the engine reacted to the run's approval
	require.ErrorIs(t, eng.Start(t.Context()), startstop.ErrAlreadyStarted)
	require.ErrorIs(t, eng.Run(t.Context()), startstop.ErrAlreadyStarted)

	require.NoError(t, eng.Stop(t.Context()))
	<-eng.Stopped()
	require.NoError(t, eng.Stop(t.Context()), "Stop is idempotent")
}
