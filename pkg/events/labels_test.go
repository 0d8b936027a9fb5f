package events

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A run's labels go from its RunApproved into its snapshot, and a run
// without labels has none there (the snapshot's JSON leaves them out).
func TestProjectRecordsLabels(t *testing.T) {
	t.Parallel()
	runID := NewRunID()
	approved := func(labels map[string]string) Event {
		raw, err := MarshalData(RunApprovedData{TenantID: "t1", Labels: labels})
		require.NoError(t, err)
		return Event{SchemaVersion: 1, RunID: runID, RunSeq: 1, EventType: RunApproved, EventData: raw}
	}
	labels := map[string]string{"team": "data", "note": ""}
	s, err := Project(runID, []Event{approved(labels)})
	require.NoError(t, err)
	require.Equal(t, labels, s.Labels)

	s, err = Project(runID, []Event{approved(nil)})
	require.NoError(t, err)
	require.Nil(t, s.Labels)
	doc, err := json.Marshal(s)
	require.NoError(t, err)
	require.NotContains(t, string(doc), `"labels"`)
}
