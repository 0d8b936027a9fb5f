package strictjson

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNumericEdges checks the bounds against what PostgreSQL 15's jsonb
// input accepts (each case was checked with select '<n>'::jsonb).
func TestNumericEdges(t *testing.T) {
	for n, fits := range map[string]bool{
		"1e131071": true, "1e131072": false, "9.9e131071": true, "-9e131071": true,
		"0.001e131074": true, "0.001e131075": false, "1E131072": false,
		"1e-16383": true, "1e-16384": false, "1.5e-16383": false, "1.0e-16383": false, "10e-16384": false,
		"0e-16383": true, "0e-16384": false, "0e999999": true, "-0.00e131073": true,
		"0e1073741822": true, "0e1073741823": false, "0e-1073741823": false, "1e1000000000000000000000": false,
		"1e999999": false, "1e400": true, "123.456": true, "0": true,
	} {
		require.Equal(t, fits, numericFits(n), n)
	}
}

// TestNumericOption checks that Options.Numeric names the offending value's
// path, and that without it such a number in a json.RawMessage passes.
func TestNumericOption(t *testing.T) {
	var v struct {
		Input json.RawMessage `json:"input"`
	}
	doc := []byte(`{"input":{"n":1e131072,"ok":1e131071}}`)
	require.NoError(t, Decode(doc, &v, Options{}))
	err := Decode(doc, &v, Options{Numeric: true})
	serr, ok := errors.AsType[*Error](err)
	require.True(t, ok, "%v", err)
	require.Len(t, serr.Problems, 1)
	require.Equal(t, "input.n", serr.Problems[0].Path)
	require.Equal(t, CodeOutOfRange, serr.Problems[0].Code)
	require.NoError(t, Valid([]byte(`[1e131071]`), Options{Numeric: true}))
	require.Error(t, Valid([]byte(`[1e131072]`), Options{Numeric: true}))
}
