package pgboot

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// reachableTemp is a new folder every user may search, under os.TempDir
// (t.TempDir's folders are private to their owner).
func reachableTemp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "weft-pgboot-place-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// The path logic of a start as root, whoever runs the test: a folder of
// mode 0700 above the data folder blocks every user but its owner (and
// root), a group-searchable one lets its group in.
func TestFirstUnsearchableFindsTheBlockingFolder(t *testing.T) {
	t.Parallel()
	home := filepath.Join(reachableTemp(t), "home")
	require.NoError(t, os.Mkdir(home, 0o700))
	data := filepath.Join(home, "clone", ".weft", "dev", "pg")
	require.NoError(t, os.MkdirAll(data, 0o755))
	st, err := os.Stat(home)
	require.NoError(t, err)
	owner := ownerOf(st)
	other := owner + 4242

	blocked, err := firstUnsearchable(data, other, nil)
	require.NoError(t, err)
	require.Equal(t, home, blocked, "another user cannot enter a 0700 folder")
	for name, uid := range map[string]uint32{"owner": owner, "root": 0} {
		blocked, err = firstUnsearchable(data, uid, nil)
		require.NoError(t, err)
		require.Empty(t, blocked, name)
	}

	require.NoError(t, os.Chmod(home, 0o710))
	gid := strconv.Itoa(os.Getegid())
	blocked, err = firstUnsearchable(data, other, []string{gid})
	require.NoError(t, err)
	require.Empty(t, blocked, "the folder's group may search a 0710 folder")
	blocked, err = firstUnsearchable(data, other, nil)
	require.NoError(t, err)
	require.Equal(t, home, blocked, "others still may not")
}

// When the cluster can go neither in its data folder nor under the
// relocation root, the error says why and what to do, not initdb's words.
func TestPlaceSaysWhyWhenItCannotRelocate(t *testing.T) {
	t.Parallel()
	u, err := user.Lookup("nobody")
	require.NoError(t, err, "the test needs the system user nobody")
	base := reachableTemp(t)
	home, root := filepath.Join(base, "home"), filepath.Join(base, "spare")
	require.NoError(t, os.Mkdir(home, 0o700))
	require.NoError(t, os.Mkdir(root, 0o700))
	data := filepath.Join(home, "pg")

	_, err = place(data, root, u.Username)
	var unreachable *UnreachableError
	require.ErrorAs(t, err, &unreachable)
	require.Equal(t, home, unreachable.Blocked)
	require.ErrorContains(t, err, "cannot reach "+data+": "+home+" is not searchable by it")
	require.ErrorContains(t, err, "nor can it reach "+root+", where the cluster would go instead: "+root+" is not searchable by it")
	require.ErrorContains(t, err, "Run as a user other than root, keep the data folder under a folder the \"nobody\" user can enter, or point WEFT_DATABASE_URL at a running server")
	_, err = os.Stat(filepath.Join(data, relocatedFile))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing is recorded")
}
