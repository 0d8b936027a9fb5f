package devfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/cmd/weft/internal/devfile"
)

// Read gives back what Write wrote, which only its owner may read; no
// file is (nil, nil); a file that is not the endpoints says which file.
func TestWriteRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	got, err := devfile.Read(dir)
	require.NoError(t, err)
	require.Nil(t, got, "no file yet")

	e := devfile.Endpoints{Gateway: "http://127.0.0.1:1", ReadAPI: "http://127.0.0.1:2", NATS: "nats://127.0.0.1:3",
		NATSUser: "u", NATSPasswordFile: "/p", TokenFile: "/t"}
	require.NoError(t, devfile.Write(dir, e))
	require.NoError(t, devfile.Write(dir, e), "rewriting replaces the file")
	got, err = devfile.Read(dir)
	require.NoError(t, err)
	require.Equal(t, e, *got)
	st, err := os.Stat(filepath.Join(dir, devfile.Name))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	left, err := filepath.Glob(filepath.Join(dir, ".*"))
	require.NoError(t, err)
	require.Empty(t, left, "no temporary file is left")

	require.NoError(t, os.WriteFile(filepath.Join(dir, devfile.Name), []byte("{"), 0o600))
	_, err = devfile.Read(dir)
	require.ErrorContains(t, err, filepath.Join(dir, devfile.Name))
}
