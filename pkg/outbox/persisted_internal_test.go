package outbox

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

// outbox.headers as EnqueueBatch writes it (a JSON object of header name to
// value), read back as the relay reads it (docs/persisted-format.md).
func TestPersistedGoldenHeaders(t *testing.T) {
	headers := map[string]string{
		"Weft-Event-Type": "StepCompleted",
		"Weft-Run-Seq":    "7",
		"traceparent":     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	}
	written, err := encodeHeaders(headers)
	require.NoError(t, err)
	golden := goldentest.Compare(t, "testdata/persisted/headers.json", []byte(written))
	var read map[string]string
	require.NoError(t, json.Unmarshal(golden, &read))
	require.Equal(t, headers, read)

	empty, err := encodeHeaders(nil)
	require.NoError(t, err)
	require.JSONEq(t, `{}`, empty, "no headers is an empty object, never NULL (the column is NOT NULL)")
}
