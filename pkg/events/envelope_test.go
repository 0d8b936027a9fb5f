package events_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
)

func TestNewFillsIdentityAndKey(t *testing.T) {
	t.Parallel()
	runID := events.NewRunID()
	ev, err := events.New(events.Spec{
		RunID: runID, StepID: "build", LogicalAttemptID: "2", Type: events.StepScheduled,
		PlanVersion: "7", Data: events.StepScheduledData{Activity: "echo", Queue: "default"},
		CausedBySignalID: "sig-1",
	})
	require.NoError(t, err)
	require.Equal(t, events.SchemaVersion, ev.SchemaVersion)
	require.Equal(t, runID[:13], ev.EventID[:13], "event id shares the run id's partition prefix")
	require.Equal(t, events.IdempotencyKey(runID, "build", "2", events.StepScheduled, "7"), ev.IdempotencyKey)
	require.JSONEq(t, `{"activity":"echo","queue":"default"}`, string(ev.EventData))
	require.Equal(t, "sig-1", ev.CausedBySignalID)
	require.Zero(t, ev.RunSeq, "runSeq is the append authority's")
	require.True(t, ev.PersistedAt.IsZero())
	require.False(t, ev.EmittedAt.IsZero())

	again, err := events.New(events.Spec{RunID: runID, StepID: "build", LogicalAttemptID: "2", Type: events.StepScheduled, PlanVersion: "7"})
	require.NoError(t, err)
	require.NotEqual(t, ev.EventID, again.EventID, "every event gets its own id")
	require.Equal(t, ev.IdempotencyKey, again.IdempotencyKey, "the key depends on the logical identity only")
	require.Nil(t, again.EventData)
}

func TestNewRefusesBadInput(t *testing.T) {
	t.Parallel()
	_, err := events.New(events.Spec{RunID: "not-a-uuid", Type: events.RunStarted})
	require.ErrorContains(t, err, "not a UUID")
	_, err = events.New(events.Spec{RunID: events.NewRunID(), Type: events.RunStarted, Data: func() {}})
	require.ErrorContains(t, err, "marshal event data")
}
