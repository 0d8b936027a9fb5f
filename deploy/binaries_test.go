package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
)

// binaries are the executables the deploy tests run: the weft binary and
// nats-server (v2, from the module cache: it is in go.mod).
type binaries struct{ weft, natsServer string }

// buildBinaries returns the binaries, built once for the package's tests
// into a folder others may run them from (the container tests run them as
// another user), removed when the tests end. They are built as the test
// binary is (-race under `make test`: raceFlags), so that the builds reuse
// the packages compiled for the tests instead of compiling them all again.
func buildBinaries(t *testing.T) binaries {
	t.Helper()
	b, err := built()
	require.NoError(t, err)
	return b
}

var built = sync.OnceValues(func() (binaries, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return binaries{}, fmt.Errorf("the deploy tests build their binaries with the go tool: %w", err)
	}
	dir, err := os.MkdirTemp("", "weft-deploy-test-")
	if err != nil {
		return binaries{}, err
	}
	weftest.AtExit(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		return binaries{}, err
	}
	b := binaries{weft: filepath.Join(dir, "weft"), natsServer: filepath.Join(dir, "nats-server")}
	for pkg, out := range map[string]string{"./cmd/weft": b.weft, "github.com/nats-io/nats-server/v2": b.natsServer} {
		cmd := exec.Command(goTool, append(append([]string{"build"}, raceFlags...), "-o", out, pkg)...)
		cmd.Dir = ".." // the module root
		if output, err := cmd.CombinedOutput(); err != nil {
			return binaries{}, fmt.Errorf("go build %s: %w: %s", pkg, err, output)
		}
	}
	return b, nil
})
