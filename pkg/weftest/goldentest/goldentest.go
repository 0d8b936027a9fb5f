// Package goldentest holds the golden-file checks of Weft's persisted
// records (docs/persisted-format.md): a record as today's code writes it
// must equal the file recorded in testdata, so a change that would break
// an old record fails the build.
package goldentest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// UpdateEnv is the variable that, set to 1, rewrites the golden files
// from today's writer instead of comparing. Review the diff before
// committing it: a changed golden file is a persisted-format change.
const UpdateEnv = "WEFT_UPDATE_GOLDEN"

// Compare requires that the golden file at path holds written followed by
// a newline, and returns the file's bytes. With UpdateEnv=1 it first
// rewrites the file.
func Compare(t testing.TB, path string, written []byte) []byte {
	t.Helper()
	written = append(written, '\n')
	if os.Getenv(UpdateEnv) == "1" {
		require.NoError(t, os.WriteFile(path, written, 0o600))
	}
	golden, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; generate it with %s=1", UpdateEnv)
	require.Equal(t, string(golden), string(written),
		"today's writer no longer writes %s as recorded: a persisted-format change (docs/persisted-format.md)", path)
	return golden
}

// WithUnknownField returns the JSON object data with an extra top-level
// field no version of Weft writes: a record from a newer writer, which an
// older reader must decode all the same.
func WithUnknownField(t testing.TB, data []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &m))
	m["addedByANewerWeft"] = json.RawMessage(`{"nested":[1,"two",null]}`)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

// Record is one persisted record under golden test: Name is its file in the
// golden directory (without ".json"), Write returns the bytes today's
// writer produces, and Check requires that data decodes, with today's
// reader, to the fields spelled out in the test.
type Record struct {
	Name  string
	Write func(t testing.TB) []byte
	Check func(t testing.TB, data []byte)
}

// JSON returns the Record of a value of T: written with json.Marshal from
// what write builds, and read with read (json.Unmarshal when nil) into a
// T that must equal want.
func JSON[T any](name string, write func(t testing.TB) T, want T, read func(data []byte, v any) error) Record {
	if read == nil {
		read = json.Unmarshal
	}
	return Record{
		Name: name,
		Write: func(t testing.TB) []byte {
			t.Helper()
			b, err := json.Marshal(write(t))
			require.NoError(t, err)
			return b
		},
		Check: func(t testing.TB, data []byte) {
			t.Helper()
			var got T
			require.NoError(t, read(data, &got))
			require.Equal(t, want, got)
		},
	}
}

// CheckAll runs both checks of every record in dir, each in a parallel
// subtest: today's writer still writes the golden file byte for byte and
// today's reader decodes it (Compare), and the same file with a field only
// a newer writer knows decodes to the same fields (WithUnknownField).
func CheckAll(t *testing.T, dir string, records []Record) {
	t.Helper()
	for _, r := range records {
		t.Run(r.Name, func(t *testing.T) {
			t.Parallel()
			golden := Compare(t, filepath.Join(dir, r.Name+".json"), r.Write(t))
			r.Check(t, golden)
			r.Check(t, WithUnknownField(t, golden))
		})
	}
}
