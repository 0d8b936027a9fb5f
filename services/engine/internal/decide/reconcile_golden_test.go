package decide

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

// The engine's StepStarted and StepCompleted payloads of keyed attempts
// (docs/reconciliation.md), recorded in testdata/persisted. They extend
// pkg/events' payloads additively: the projector, and an engine that
// predates reconciliation, read them as the plain payloads, and this
// engine reads the plain payloads. WEFT_UPDATE_GOLDEN=1 rewrites the
// files; review the diff (docs/persisted-format.md).

func startedKeyedGolden() stepStartedData {
	return stepStartedData{StepStartedData: events.StepStartedData{WorkerID: "worker-1"}, ActivityKey: "order-42"}
}

func completedReconciledGolden() stepCompletedData {
	return stepCompletedData{
		StepCompletedData: events.StepCompletedData{Output: json.RawMessage(`{"receipt":"r-1"}`),
			Artifacts: []events.ArtifactRef{{URI: "s3://bucket/receipt", Kind: "receipt"}}},
		ReconciledBy: task.ReconciledByVerify,
	}
}

func TestPersistedGoldenReconcilePayloads(t *testing.T) {
	t.Parallel()
	t.Run("StepStarted_keyed", func(t *testing.T) {
		t.Parallel()
		golden := compareGolden(t, "StepStarted_keyed", startedKeyedGolden())
		var got stepStartedData
		require.NoError(t, events.Event{EventData: golden}.Data(&got))
		require.Equal(t, startedKeyedGolden(), got)
		var old events.StepStartedData // the projector's (and an older engine's) reader
		require.NoError(t, events.Event{EventData: golden}.Data(&old))
		require.Equal(t, events.StepStartedData{WorkerID: "worker-1"}, old)
	})
	t.Run("StepCompleted_reconciled", func(t *testing.T) {
		t.Parallel()
		golden := compareGolden(t, "StepCompleted_reconciled", completedReconciledGolden())
		var got stepCompletedData
		require.NoError(t, events.Event{EventData: golden}.Data(&got))
		require.Equal(t, completedReconciledGolden(), got)
		var old events.StepCompletedData
		require.NoError(t, events.Event{EventData: golden}.Data(&old))
		require.Equal(t, completedReconciledGolden().StepCompletedData, old)
	})
	t.Run("StepStarted_unkeyed", func(t *testing.T) {
		t.Parallel()
		// An older writer's payload folds to a state without a key.
		shared, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "pkg", "events", "testdata", "persisted", "StepStarted.json"))
		require.NoError(t, err)
		var got stepStartedData
		require.NoError(t, events.Event{EventData: shared}.Data(&got))
		require.Equal(t, stepStartedData{StepStartedData: events.StepStartedData{WorkerID: "worker-1"}}, got)
	})
}

func compareGolden(t *testing.T, name string, v any) []byte {
	t.Helper()
	written, err := events.MarshalData(v)
	require.NoError(t, err)
	return goldentest.Compare(t, filepath.Join("testdata", "persisted", name+".json"), written)
}
