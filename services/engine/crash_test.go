package engine_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/services/engine"
)

// Environment of the engine child process the crash tests start; TestMain
// runs crashChild instead of the tests when childDBEnv is set.
const (
	childDBEnv    = "WEFT_ENGINE_CHILD_DB"
	childNATSEnv  = "WEFT_ENGINE_CHILD_NATS"
	childCrashEnv = "WEFT_ENGINE_CHILD_CRASH" // "<point>:<n>": die at the n-th time the point is reached (before-commit-past: see crashChild)
	childExit     = 3
)

// The engine dies inside a round, after its writes and before its commit,
// and after a round's commit, before its ack: the n-th time, for several n,
// so the crash lands on starting the run, scheduling, recording results
// and finishing. A fresh engine then drives the run to completion, and the
// log holds every logical attempt's events once.
func TestEngineCrashes(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"before-commit", "after-commit"} {
		// Batched rounds commit at least 4 times for this plan (start, a,
		// b and c, d), so the 4th commit is always reached.
		for _, n := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/%d", point, n), func(t *testing.T) {
				t.Parallel()
				testEngineCrash(t, point, n)
			})
		}
	}
}

func testEngineCrash(t *testing.T, point string, n int) {
	s := newStack(t)
	rawWorker(t, s.js, "default", echo)
	runID := s.start(t, parsePlan(t, `{"planId":"crash","planVersion":"1","steps":[
		{"id":"a","activity":"echo"},
		{"id":"b","activity":"echo","dependsOn":["a"]},
		{"id":"c","activity":"echo","dependsOn":["a"]},
		{"id":"d","activity":"echo","dependsOn":["b","c"]}]}`))

	runCrashChild(t, s, point, n)

	s.runEngine(t, crashConfig)
	evs := s.waitTerminal(t, runID)
	require.Equal(t, events.RunCompleted, terminal(evs))
	requireOncePerAttempt(t, evs)
}

// runCrashChild runs an engine in a child process until it dies at
// point, the n-th time it gets there (crashChild).
func runCrashChild(t *testing.T, s *stack, point string, n int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDBEnv+"="+s.db.URL, childNATSEnv+"="+s.nats.URL(),
		childCrashEnv+"="+point+":"+strconv.Itoa(n))
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "child output:\n%s", out)
	require.Equal(t, childExit, exitErr.ExitCode(), "the engine died at %s #%d; output:\n%s", point, n, out)
}

// requireOncePerAttempt asserts the log's invariants: runSeq gap-free from
// 1, and each (step, logical attempt, event type) at most once, so exactly
// one terminal step event per logical attempt and one terminal run event.
func requireOncePerAttempt(t *testing.T, evs []events.Event) {
	t.Helper()
	seen := map[string]bool{}
	runEnds := 0
	for i, ev := range evs {
		require.Equal(t, int64(i+1), ev.RunSeq, "runSeq is gap-free")
		k := ev.StepID + "/" + ev.LogicalAttemptID + "/" + string(ev.EventType)
		require.False(t, seen[k], "event %s logged twice", k)
		seen[k] = true
		if terminal([]events.Event{ev}) != "" {
			runEnds++
		}
	}
	require.Equal(t, 1, runEnds, "one terminal run event")
}

// crashConfig is the engine config of both sides of a crash test: a short
// AckWait, so the messages the dead engine held come back quickly.
// Both hold the same task keys, as the engines of a deployment do.
var crashConfig = engine.Config{AckWait: 2 * time.Second, TaskKeys: testTaskKeys}

// crashChild is the child's main: an engine that exits with childExit the
// n-th time it reaches the crash point. It returns an error if it never
// does.
//
// At the point "serve" it never dies on its own: it runs, with the
// partition tests' config, until it is killed or three minutes pass.
func crashChild() error {
	timeout := waitFor
	if strings.HasPrefix(os.Getenv(childCrashEnv), "serve:") {
		timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pool, err := pgxpool.New(ctx, os.Getenv(childDBEnv))
	if err != nil {
		return err
	}
	defer pool.Close()
	nc, err := nats.Connect(os.Getenv(childNATSEnv))
	if err != nil {
		return err
	}
	defer nc.Close()
	point, count, _ := strings.Cut(os.Getenv(childCrashEnv), ":")
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil {
		return fmt.Errorf("crash point %q: %w", os.Getenv(childCrashEnv), err)
	}
	var reached atomic.Int64
	die := func() {
		if reached.Add(1) == n {
			os.Exit(childExit)
		}
	}
	cfg := crashConfig
	switch point {
	case "before-commit":
		cfg.TestingKnobs.BeforeCommit = die
	case "after-commit":
		cfg.TestingKnobs.AfterCommit = die
	case "before-commit-past": // n is a run head: die once some run's log is that long
		cfg.TestingKnobs.BeforeCommit = func() {
			var head int64
			if pool.QueryRow(ctx, `SELECT coalesce(max(head_seq), 0) FROM run_heads`).Scan(&head) == nil && head >= n {
				os.Exit(childExit)
			}
		}
	case "serve":
		cfg = partitionedConfig
		cfg.TaskKeys = crashConfig.TaskKeys
	default:
		return fmt.Errorf("unknown crash point %q", point)
	}
	eng, err := engine.New(pool, nc, cfg)
	if err != nil {
		return err
	}
	if err := eng.Run(ctx); err != nil {
		return err
	}
	return fmt.Errorf("the engine never reached %s #%d", point, n)
}
