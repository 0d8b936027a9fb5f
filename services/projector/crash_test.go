package projector_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/policy/auth"
	"github.com/weftrun/weft/services/projector"
)

// Environment of the projector child process the crash test starts;
// TestMain runs crashChild instead of the tests when childDBEnv is set.
const (
	childDBEnv    = "WEFT_PROJECTOR_CHILD_DB"
	childNATSEnv  = "WEFT_PROJECTOR_CHILD_NATS"
	childCrashEnv = "WEFT_PROJECTOR_CHILD_CRASH" // n: die inside the n-th batch, before its commit
	childExit     = 3
)

// The projector dies inside a batch, after its snapshot writes and before
// the commit, for several batches. A fresh projector resumes from the
// stored watermarks: the snapshots end equal to the log's projection, each
// event applied once.
func TestProjectorCrashMidBatch(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 3} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			t.Parallel()
			s := newStack(t)
			runs := []string{s.approve(t, "crash-a"), s.approve(t, "crash-b")}
			for _, runID := range runs {
				for _, ev := range lifecycle(t, runID) { // a message each, so many batches
					s.appendBus(t, ev)
				}
			}

			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childDBEnv+"="+s.db.URL, childNATSEnv+"="+s.nats.URL(),
				childCrashEnv+"="+strconv.Itoa(n))
			out, err := cmd.CombinedOutput()
			var exitErr *exec.ExitError
			require.ErrorAs(t, err, &exitErr, "child output:\n%s", out)
			require.Equal(t, childExit, exitErr.ExitCode(), "the projector died in batch %d; output:\n%s", n, out)

			// A run the child never reached has no row for the resync loop
			// to find; its messages come back after AckWait.
			s.serve(t, projector.Config{AckWait: 2 * time.Second})
			for _, runID := range runs {
				v := s.waitRun(t, runID, atSeq(6), "completes after the restart")
				s.requireMatchesLog(t, v)
			}
		})
	}
}

// crashChild runs a projector that exits with childExit inside the n-th
// batch that changes a snapshot, before that batch commits.
func crashChild() error {
	n, err := strconv.Atoi(os.Getenv(childCrashEnv))
	if err != nil {
		return err
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv(childDBEnv))
	if err != nil {
		return err
	}
	nc, err := nats.Connect(os.Getenv(childNATSEnv))
	if err != nil {
		return err
	}
	keys, err := auth.NewKeys()
	if err != nil {
		return err
	}
	var batches atomic.Int32
	cfg := projector.Config{Keys: keys, MaxBatch: 2, Addr: "127.0.0.1:0", TestingKnobs: projector.TestingKnobs{
		BeforeCommit: func(runs int) {
			if runs > 0 {
				if int(batches.Add(1)) == n {
					os.Exit(childExit)
				}
			}
		},
	}}
	p, err := projector.New(pool, nc, cfg)
	if err != nil {
		return err
	}
	if err := p.Run(ctx); err != nil {
		return err
	}
	return fmt.Errorf("the projector stopped without reaching batch %d", n)
}
