package api_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

// The signal gateway stores AcceptedSignalResult as
// signal_acceptances.response and answers repeats of a signal with it, so
// a new build must read what an old one stored. The golden file
// testdata/persisted/AcceptedSignalResult.json records it as written today;
// WEFT_UPDATE_GOLDEN=1 rewrites it (docs/persisted-format.md).

func acceptedGolden() api.AcceptedSignalResult {
	return api.AcceptedSignalResult{
		Accepted: true, WorkflowID: "0190a8e2-7b3c-7def-8123-456789abcdef", SignalName: "approve",
		SignalID: "sig-1", AcceptedAt: time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC),
		SignalStorageKey: "sig:approve:sig-1",
	}
}

func TestPersistedGoldenAcceptedSignalResult(t *testing.T) {
	t.Parallel()
	written, err := json.Marshal(acceptedGolden())
	require.NoError(t, err)
	golden := goldentest.Compare(t, filepath.Join("testdata", "persisted", "AcceptedSignalResult.json"), written)

	var got api.AcceptedSignalResult
	require.NoError(t, json.Unmarshal(golden, &got))
	require.Equal(t, acceptedGolden(), got)
}

func TestPersistedUnknownFieldsAcceptedSignalResult(t *testing.T) {
	t.Parallel()
	var got api.AcceptedSignalResult
	require.NoError(t, json.Unmarshal([]byte(`{"accepted":true,"workflowId":"0190a8e2-7b3c-7def-8123-456789abcdef",`+
		`"signalName":"approve","signalId":"sig-1","acceptedAt":"2024-07-01T12:00:00Z",`+
		`"signalStorageKey":"sig:approve:sig-1","addedByANewerWeft":{"x":[1]}}`), &got))
	require.Equal(t, acceptedGolden(), got)
}
